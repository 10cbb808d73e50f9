"""An agent started from a user's workflow holds when that workflow is cancelled, continues as new or times out."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import CancelledError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from users_workflows import AskAgent, ContinuesWhileTheAgentRuns, StartsAndWaits

from stalwart import StalwartPlugin
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.contracts.run import AgentResult

from support import gate_tool
from support.hour_long_tool import hour_long_job, tool_started

WORKFLOWS = [AskAgent, ContinuesWhileTheAgentRuns, StartsAndWaits]


@pytest.fixture
def time_skipping_env(own_time_skipping_env):
    """A server per test: each needs workflow time to pass, and leaves a tool behind (see tests/conftest.py)."""
    return own_time_skipping_env


def _calling(tool: str, **budgets: object) -> AgentSpec:
    return AgentSpec(
        name="worker-agent",
        tools=[tool],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name=tool, arguments={"topic": "x"})]),
            ScriptedReply(text="all done"),
        ],
        budgets=Budgets(**budgets),
    )


def _worker(env: WorkflowEnvironment, task_queue: str) -> Worker:
    plugin = StalwartPlugin(tools=[hour_long_job, gate_tool.gated_job])
    return Worker(env.client, task_queue=task_queue, workflows=WORKFLOWS, plugins=[plugin])


async def _child_id(env: WorkflowEnvironment, parent_id: str) -> str:
    while True:
        async for event in env.client.get_workflow_handle(parent_id).fetch_history_events():
            if event.HasField("start_child_workflow_execution_initiated_event_attributes"):
                return event.start_child_workflow_execution_initiated_event_attributes.workflow_id
        await asyncio.sleep(0.05)


async def test_a_cancelled_workflow_cancels_its_agent_which_keeps_its_steps(time_skipping_env, task_queue):
    tool_started.clear()
    parent_id = f"ask-{uuid.uuid4()}"
    async with _worker(time_skipping_env, task_queue):
        parent = await time_skipping_env.client.start_workflow(
            AskAgent.run, args=[_calling("hour_long_job"), "work"], id=parent_id, task_queue=task_queue
        )
        await tool_started.wait()
        child = time_skipping_env.client.get_workflow_handle(
            await _child_id(time_skipping_env, parent_id), result_type=AgentResult
        )
        await parent.cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await parent.result()
        agent = await child.result()
    assert isinstance(failed.value.cause, CancelledError)
    assert agent.stop_reason == "cancelled"
    assert [s.role for s in agent.steps] == ["user", "assistant", "tool"]
    assert agent.steps[-1].error == "cancelled"


async def test_a_workflow_continued_as_new_while_its_agent_runs_gets_the_result_in_its_next_run(
    time_skipping_env, task_queue
):
    gate_tool.gate.clear()
    gate_tool.calls.clear()
    parent_id = f"continues-{uuid.uuid4()}"
    client = time_skipping_env.client
    async with _worker(time_skipping_env, task_queue):
        parent = await client.start_workflow(
            ContinuesWhileTheAgentRuns.run,
            args=[_calling("gated_job"), "work", ""],
            id=parent_id,
            task_queue=task_queue,
        )
        first_run = parent.result_run_id
        while not gate_tool.calls:
            await asyncio.sleep(0.05)
        while (await client.get_workflow_handle(parent_id, run_id=first_run).describe()).status == (
            WorkflowExecutionStatus.RUNNING
        ):
            await asyncio.sleep(0.05)
        first = await client.get_workflow_handle(parent_id, run_id=first_run).describe()
        gate_tool.gate.set()
        result = await parent.result()
    assert first.status == WorkflowExecutionStatus.CONTINUED_AS_NEW
    assert (result.stop_reason, result.answer) == ("done", "all done")
    assert gate_tool.calls == ["x"]


async def test_the_workflows_deadline_ends_its_agents_calls(dev_env, task_queue):
    """On the dev server, in real time: the agent's deadline is its workflow's, a few seconds after the start."""
    tool_started.clear()
    parent_id = f"deadline-{uuid.uuid4()}"
    client = dev_env.client
    plugin = StalwartPlugin(tools=[hour_long_job])
    async with Worker(client, task_queue=task_queue, workflows=WORKFLOWS, plugins=[plugin]):
        await client.start_workflow(
            StartsAndWaits.run,
            args=[_calling("hour_long_job"), "work"],
            id=parent_id,
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=4),
        )
        await tool_started.wait()
        child = client.get_workflow_handle(f"{parent_id}/agent", result_type=AgentResult)
        agent = await child.result()
    assert agent.stop_reason == "max_seconds"
    assert agent.steps[-1].tool_name == "hour_long_job"
    assert agent.steps[-1].error == "cancelled: the deadline of the run that started this one was reached"
    assert agent.budget_fired_after_seconds is not None and agent.budget_fired_after_seconds <= 4  # the deadline
    assert agent.elapsed_seconds < 60  # the hour-long tool did not run on
