"""Delegation to a local sub-agent, which runs as a child workflow, on the time-skipping Temporal server."""

from __future__ import annotations

from delegation_team import RESEARCH, call, child_id, delegating, lead, researcher
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from stalwart.contracts.agent import AgentSpec, ScriptedReply, SubAgent
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.workflows import AgentWorkflow


async def test_a_delegation_runs_the_sub_agent_as_a_child_run_whose_answer_is_the_tool_result(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(lead(delegating(), ScriptedReply(text="Qubits.")), "Explain quantum computing")
        result = await handle.result()
        child = await stalwart.temporal.get_workflow_handle(child_id(handle.run_id)).describe()
    delegation = result.steps[2]
    assert (delegation.tool_kind, delegation.tool_name, delegation.result) == ("agent", "researcher", RESEARCH)
    assert (child.parent_id, child.workflow_type) == (handle.run_id, "AgentWorkflow")
    assert result.answer == "Qubits."


async def test_a_delegating_run_has_the_kaos_delegation_events(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(lead(delegating(), ScriptedReply(text="Qubits.")), "Explain quantum computing")
        await handle.result()
        events = await handle.events()
    assert [e.event_type for e in events] == [
        "user_message",
        "delegation_request",
        "delegation_response",
        "agent_response",
    ]
    assert events[1].content == {"agent": "researcher", "task": "Find quantum info"}
    assert events[2].content == RESEARCH


async def test_the_parents_usage_includes_the_sub_agents_usage(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(lead(delegating(), ScriptedReply(text="Qubits.")), "Explain quantum computing")
        result = await handle.result()
        child = await stalwart.get(child_id(handle.run_id)).result()
    own = sum(s.usage.total_tokens for s in result.steps if s.role == "assistant")
    assert child.usage.total_tokens == 20
    assert result.usage.total_tokens == own + child.usage.total_tokens


async def test_a_sub_agent_that_exhausts_its_steps_is_fed_back_as_a_delegation_error_and_the_parent_finishes(
    stalwart, worker_with
):
    looping = ScriptedReply(tool_calls=[call("echo", text="again")])
    sub = researcher(looping, looping, looping, tools=["echo"], max_steps=2)
    async with worker_with():
        handle = await stalwart.start(
            lead(delegating(), ScriptedReply(text="The researcher ran out of steps."), sub=sub), "Explain"
        )
        result = await handle.result()
        events = await handle.events()
    assert result.stop_reason == "done"
    assert [e.event_type for e in events] == [
        "user_message",
        "delegation_request",
        "delegation_error",
        "agent_response",
    ]
    assert events[2].content.startswith(
        "Delegation failed: sub-agent researcher stopped with max_steps: Reached maximum reasoning steps (2)."
    )


async def test_the_sub_agents_token_budget_is_capped_at_what_the_parent_has_left(stalwart, worker_with):
    costly = ScriptedReply(tool_calls=[call("echo", text="x")], input_tokens=30, output_tokens=30)
    sub = researcher(costly, costly, costly, tools=["echo"])  # no token budget of its own
    async with worker_with():
        handle = await stalwart.start(
            lead(delegating(), ScriptedReply(text="unused"), sub=sub, budgets={"max_tokens": 100}), "Explain"
        )
        result = await handle.result()
        child_input = await stalwart.get(child_id(handle.run_id)).run_input()
    assert child_input.agent.budgets.max_tokens == 100 - 20
    assert "stopped with max_tokens" in result.steps[2].error
    assert (result.stop_reason, result.usage.total_tokens) == ("max_tokens", 20 + 120)


async def test_no_sub_agent_starts_when_the_parent_has_no_budget_left(stalwart, worker_with):
    spending = ScriptedReply(
        tool_calls=[call("researcher", task="Find quantum info")], input_tokens=50, output_tokens=50
    )
    async with worker_with():
        handle = await stalwart.start(lead(spending, sub=researcher(), budgets={"max_tokens": 100}), "Explain")
        result = await handle.result()
        history = await handle.history()
    assert (
        result.steps[2].error
        == "Delegation failed: this run has no token budget left for sub-agent researcher; answer with what you have"
    )
    assert not any(e.HasField("start_child_workflow_execution_initiated_event_attributes") for e in history.events)
    assert result.stop_reason == "max_tokens"


async def test_single_mode_makes_exactly_one_model_call_without_tools(stalwart, worker_with):
    sub = researcher(
        ScriptedReply(text="One-shot summary.", tool_calls=[call("echo", text="ignored")]),
        ScriptedReply(text="never asked"),
        tools=["echo"],
    )
    async with worker_with():
        handle = await stalwart.start(
            lead(delegating(), ScriptedReply(text="Done."), sub=sub, mode="single"), "Summarise"
        )
        result = await handle.result()
        child = await stalwart.get(child_id(handle.run_id)).result()
    assert [s.role for s in child.steps] == ["user", "assistant"]
    assert (child.stop_reason, child.answer) == ("done", "One-shot summary.")
    assert result.steps[2].result == "One-shot summary."


async def test_a_delegating_run_replays_from_its_history_alone(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(lead(delegating(), ScriptedReply(text="Qubits.")), "Explain quantum computing")
        await handle.result()
        history: WorkflowHistory = await handle.history()
    await Replayer(workflows=[AgentWorkflow], data_converter=DATA_CONVERTER).replay_workflow(history)


async def test_a_sub_agent_may_delegate_in_turn_and_its_usage_reaches_the_top(stalwart, worker_with):
    helper = AgentSpec(name="helper", scripted=[ScriptedReply(text="Qubits hold 0 and 1 at once.")])
    middle = AgentSpec(
        name="researcher",
        sub_agents=[SubAgent(name="helper", spec=helper)],
        scripted=[
            ScriptedReply(tool_calls=[call("helper", task="What is a qubit?")]),
            ScriptedReply(text="A qubit is 0 and 1 at once."),
        ],
    )
    async with worker_with():
        handle = await stalwart.start(lead(delegating(), ScriptedReply(text="Done."), sub=middle), "Explain")
        result = await handle.result()
        grandchild = await stalwart.temporal.get_workflow_handle(
            f"{child_id(handle.run_id)}/helper/1-call_1_1"
        ).describe()
    assert grandchild.parent_id == child_id(handle.run_id)
    assert result.steps[2].result == "A qubit is 0 and 1 at once."
    assert result.usage.total_tokens == 20 * 5  # two turns of the lead, two of the researcher, one of the helper


async def test_sub_agents_delegated_in_one_turn_share_what_the_parent_has_left(stalwart, worker_with):
    both = ScriptedReply(tool_calls=[call("researcher", task="first"), call("researcher", task="second")])
    async with worker_with():
        handle = await stalwart.start(
            lead(both, ScriptedReply(text="done"), sub=researcher(max_tokens=50), budgets={"max_tokens": 100}),
            "Explain",
        )
        result = await handle.result()
        budgets = [
            (await stalwart.get(child_id(handle.run_id, call_id=call_id)).run_input()).agent.budgets.max_tokens
            for call_id in ("call_1_1", "call_1_2")
        ]
    # 100 - 20 spent = 80 left: the first holds its own 50, so the second may spend only the other 30.
    assert budgets == [50, 30]
    assert result.usage.total_tokens == 20 + 20 + 20 + 20
