"""A user's own sandboxed workflow runs an agent as a step: `stalwart.workflow.execute_agent` and `start_agent`."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from miscalling_workflows import CallsAnAgentWrongly
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from tools_for_agents import lookup_order
from users_workflows import AskAgent, AskForVerdict, CancelsItsAgent, TalksToASession

from stalwart import StalwartClient, StalwartPlugin
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SessionSettings
from stalwart.contracts.errors import UsageError
from stalwart.contracts.run import AgentResult
from stalwart.workflow import INVALID_AGENT_CALL, execute_agent, get_agent, start_agent

from support.approvals import until_pending

WORKFLOWS = [AskAgent, AskForVerdict, CancelsItsAgent, TalksToASession, CallsAnAgentWrongly]


def calculator_agent() -> AgentSpec:
    return AgentSpec(
        name="calc",
        tools=["calculator"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "17*23"})]),
            ScriptedReply(text="17*23 is 391."),
        ],
    )


def _worker(client: Client, task_queue: str, **plugin: object) -> Worker:
    return Worker(client, task_queue=task_queue, workflows=WORKFLOWS, plugins=[StalwartPlugin(**plugin)])  # type: ignore[arg-type]


async def test_a_users_sandboxed_workflow_gets_the_agents_result(time_skipping_env: WorkflowEnvironment, task_queue):
    client = time_skipping_env.client
    async with _worker(client, task_queue):
        result = await client.execute_workflow(
            AskAgent.run, args=[calculator_agent(), "What is 17*23?"], id=f"ask-{uuid.uuid4()}", task_queue=task_queue
        )
    assert isinstance(result, AgentResult)
    assert (result.stop_reason, result.answer) == ("done", "17*23 is 391.")
    assert [s.tool_name for s in result.steps if s.role == "tool"] == ["calculator"]


async def test_the_agent_runs_as_a_child_listed_and_described_as_a_run(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    client = time_skipping_env.client
    parent_id = f"ask-{uuid.uuid4()}"
    async with _worker(client, task_queue):
        await client.execute_workflow(
            AskAgent.run, args=[calculator_agent(), "What is 17*23?"], id=parent_id, task_queue=task_queue
        )
        history = await client.get_workflow_handle(parent_id).fetch_history()
        [started] = [
            e.start_child_workflow_execution_initiated_event_attributes
            for e in history.events
            if e.HasField("start_child_workflow_execution_initiated_event_attributes")
        ]
        child = client.get_workflow_handle(started.workflow_id)
        described = await child.describe()
        summary, details = await described.static_summary(), await described.static_details()
    assert started.workflow_type.name == names.WORKFLOW_TYPE
    assert started.workflow_id.startswith(f"{parent_id}/calc-")
    assert described.typed_search_attributes.get(names.AGENT_NAME) == "calc"
    assert described.typed_search_attributes.get(names.AGENT_STATUS) == "done"
    assert summary == "calc: What is 17*23?"
    assert f"started by workflow `{parent_id}`" in (details or "")


async def test_a_workflow_talks_to_a_session_turn_by_turn(time_skipping_env: WorkflowEnvironment, task_queue):
    agent = AgentSpec(name="chat", scripted=[ScriptedReply(text="first answer"), ScriptedReply(text="second answer")])
    client = time_skipping_env.client
    async with _worker(client, task_queue):
        answers = await client.execute_workflow(
            TalksToASession.run, args=[agent, "one", "two"], id=f"talk-{uuid.uuid4()}", task_queue=task_queue
        )
    assert answers == ["first answer", "second answer", "closed"]


def order_agent() -> AgentSpec:
    return AgentSpec(
        name="orders",
        tools=[lookup_order],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="lookup_order", arguments={"order_id": "A-1001"})]),
            ScriptedReply(text="A-1001 is a kettle for 39.50, delivered."),
        ],
    )


async def test_tools_given_as_functions_are_registered_by_the_plugin_given_the_agent(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    agent = order_agent()
    client = time_skipping_env.client
    async with _worker(client, task_queue, agents=[agent]):
        result = await client.execute_workflow(
            AskAgent.run, args=[agent, "What is order A-1001?"], id=f"ask-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result.stop_reason == "done", result.error
    [call] = [s for s in result.steps if s.role == "tool"]
    assert (call.tool_name, call.error) == ("lookup_order", None)
    assert '"item": "kettle"' in (call.result or "")


async def test_a_tool_no_worker_registered_is_named_with_how_to_register_it(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    client = time_skipping_env.client
    async with _worker(client, task_queue):  # the plugin is not given the agent
        result = await client.execute_workflow(
            AskAgent.run, args=[order_agent(), "What is A-1001?"], id=f"ask-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result.stop_reason == "error"
    assert "lookup_order" in (result.error or "") and "StalwartPlugin(agents=[agent])" in (result.error or "")


async def test_a_workflow_gets_the_agents_answer_as_an_instance_of_its_output_type(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    agent = AgentSpec(name="judge", scripted=[ScriptedReply(text='{"approved": true, "reason": "delivered broken"}')])
    client = time_skipping_env.client
    async with _worker(client, task_queue):
        said = await client.execute_workflow(
            AskForVerdict.run, args=[agent, "Refund order A-1001?"], id=f"verdict-{uuid.uuid4()}", task_queue=task_queue
        )
    assert said == "approved=True: delivered broken"


async def test_a_workflow_cancels_the_agent_it_started_and_gets_its_cancelled_result(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    client = time_skipping_env.client
    async with _worker(client, task_queue):
        result = await client.execute_workflow(
            CancelsItsAgent.run,
            args=[calculator_agent(), "What is 17*23?"],
            id=f"c-{uuid.uuid4()}",
            task_queue=task_queue,
        )
    assert result.stop_reason == "cancelled"


async def test_an_agent_that_continues_as_new_returns_its_whole_chains_result_to_the_workflow(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    agent = AgentSpec(
        name="long",
        tools=["echo"],
        thrash_guard=False,
        budgets=Budgets(max_steps=40),
        session=SessionSettings(continue_as_new_events=60),
        scripted=[
            *(ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"{n}"})]) for n in range(12)),
            ScriptedReply(text="end"),
        ],
    )
    client = time_skipping_env.client
    async with _worker(client, task_queue):
        result = await client.execute_workflow(
            AskAgent.run, args=[agent, "echo a while"], id=f"long-{uuid.uuid4()}", task_queue=task_queue
        )
    assert (result.stop_reason, result.answer) == ("done", "end")
    assert result.earlier, "the agent's run continued as new: its earlier steps are in storage"
    assert sum(archive.count for archive in result.earlier) + len(result.steps) >= 1 + 2 * 12 + 1


async def test_an_agent_in_a_workflow_waits_for_approval_and_a_person_gives_it_as_to_any_run(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    agent = calculator_agent().model_copy(update={"require_approval": ["calculator"]})
    client = time_skipping_env.client
    parent_id = f"ask-{uuid.uuid4()}"
    async with _worker(client, task_queue):
        parent = await client.start_workflow(
            AskAgent.run, args=[agent, "What is 17*23?"], id=parent_id, task_queue=task_queue
        )
        run = StalwartClient(client, task_queue=task_queue).get(await _child_id(client, parent_id))
        [waiting] = await until_pending(run)
        await run.approve(waiting.call_id)
        result = await parent.result()
    assert (result.stop_reason, result.answer) == ("done", "17*23 is 391.")


async def _child_id(client: Client, parent_id: str) -> str:
    """The id of the agent run a workflow started, once it has."""
    while True:
        async for event in client.get_workflow_handle(parent_id).fetch_history_events():
            if event.HasField("start_child_workflow_execution_initiated_event_attributes"):
                return event.start_child_workflow_execution_initiated_event_attributes.workflow_id
        await asyncio.sleep(0.05)


async def _refusal(client: Client, task_queue: str, case: str) -> ApplicationError:
    """What ended a workflow that called execute_agent wrongly (it ends: a wedged task would never return)."""
    async with _worker(client, task_queue):
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                CallsAnAgentWrongly.run, case, id=f"wrong-{uuid.uuid4()}", task_queue=task_queue
            )
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_AGENT_CALL and cause.non_retryable
    return cause


async def test_an_agent_given_as_a_dict_fails_the_workflow_saying_to_validate_it(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    refusal = await _refusal(time_skipping_env.client, task_queue, "agent as a dict")
    assert "agent: got a dict" in refusal.message and "AgentSpec.model_validate(" in refusal.message


async def test_an_agent_given_as_a_path_fails_the_workflow_saying_to_load_it_outside(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    refusal = await _refusal(time_skipping_env.client, task_queue, "agent as a path")
    assert "'agents/calculator.toml' is a path" in refusal.message
    assert "load_agent(path)" in refusal.message and "outside the workflow" in refusal.message


async def test_a_goal_that_is_not_text_fails_the_workflow_naming_the_goal(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    refusal = await _refusal(time_skipping_env.client, task_queue, "goal as a number")
    assert "goal: got int 42" in refusal.message and "(a str)" in refusal.message


async def test_inputs_that_are_not_json_fail_the_workflow_naming_the_input(
    time_skipping_env: WorkflowEnvironment, task_queue
):
    refusal = await _refusal(time_skipping_env.client, task_queue, "inputs not JSON")
    assert "inputs['when']: object cannot be sent as JSON" in refusal.message
    assert "JSON values" in refusal.message


@pytest.mark.parametrize(
    "case",
    ["output type without a schema", "output type without a schema, for a typed agent", "output type an instance"],
)
async def test_an_output_type_pydantic_cannot_read_fails_the_workflow_saying_so(
    time_skipping_env: WorkflowEnvironment, task_queue, case
):
    refusal = await _refusal(time_skipping_env.client, task_queue, case)
    assert "cannot be an agent's output: " in refusal.message
    assert ("pydantic builds no JSON Schema for it" in refusal.message) != ("an instance" in case)


@pytest.mark.parametrize(
    ("call", "instead"),
    [
        (lambda: execute_agent(calculator_agent(), "go"), "StalwartClient.run"),
        (lambda: start_agent(calculator_agent(), "go"), "StalwartClient.start"),
        (lambda: get_agent("some-run").result(), "StalwartClient.get(id)"),
    ],
    ids=["execute_agent", "start_agent", "get_agent"],
)
async def test_a_call_outside_a_workflow_says_where_it_runs_and_what_does_the_same_outside(call, instead):
    with pytest.raises(UsageError) as refused:
        await call()
    assert "runs inside a workflow of yours" in str(refused.value) and instead in str(refused.value)
