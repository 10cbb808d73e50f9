"""No side effects after the budget (issue 11, defect 9): once a run's wall-clock deadline has passed, no tool or
model activity starts, even when the workflow itself cannot run to cancel them (its worker down).

The scheduled activities' timeouts are capped at the time the run has left, so the server starts no attempt after
the deadline; and the activities themselves check the deadline they are given before they act.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools.registry import RetryableToolError, ToolContext, tool
from stalwart.client.api import StalwartClient
from stalwart.contracts.activities import BUDGET_OVER, AgentContext, ModelRequest, ToolRequest
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import Message, ToolCall, TranscriptRef
from stalwart.workers.plugin import default_tool_registry
from stalwart.workflows import AgentWorkflow

MAX_SECONDS = 6
executions: list[float] = []  # time.time() of every execution of `flaky_effect`
first_run = asyncio.Event()


@tool(side_effecting=True, heartbeat_timeout_seconds=30)
async def flaky_effect(target: str, context: ToolContext) -> str:
    """Does something to `target`, and fails in a way that is worth retrying.

    Args:
        target: What to act on.
    """
    executions.append(time.time())
    first_run.set()
    raise RetryableToolError(f"{target} is busy")


def _agent() -> AgentSpec:
    return AgentSpec(
        name="late",
        tools=["flaky_effect"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="flaky_effect", arguments={"target": "db"})]),
            ScriptedReply(text="never reached"),
        ],
        budgets=Budgets(max_seconds=MAX_SECONDS),
    )


@pytest.mark.slow
async def test_side_effects_after_the_budget_a_tool_retried_across_the_deadline_does_not_run_after_it(
    dev_env, task_queue
):
    """The workflow's worker is down across the deadline while the tool's worker keeps polling: the tool's retries
    (after 1, 2, 4 s ...) would run past the deadline if the server still handed them out."""
    executions.clear()
    first_run.clear()
    client = dev_env.client
    registry = default_tool_registry()
    registry.register(flaky_effect)
    tools, models = ToolActivities(registry), ModelActivities()
    activities = Worker(
        client, task_queue=task_queue, activities=[models.model_turn, tools.describe_tools, tools.run_tool]
    )
    stalwart = StalwartClient(client, task_queue=task_queue)
    async with activities:
        async with Worker(client, task_queue=task_queue, workflows=[AgentWorkflow]):
            handle = await stalwart.start(_agent(), "act on the db")
            await first_run.wait()
        # No workflow worker now: nothing can cancel the tool's retries when the budget's timer fires.
        started = (await client.get_workflow_handle(handle.run_id).describe()).start_time
        deadline = started.timestamp() + MAX_SECONDS
        while time.time() < deadline + 4:  # past the deadline and the retry that would fall after it
            await asyncio.sleep(0.5)
        async with Worker(client, task_queue=task_queue, workflows=[AgentWorkflow]):
            result = await handle.result()
    late = [round(at - deadline, 2) for at in executions if at >= deadline]
    print(f"\ntool executions: {len(executions)}, after the deadline: {late}")
    assert result.stop_reason == "max_seconds"
    assert len(executions) >= 2  # it was being retried when the deadline came
    assert late == []


def _past() -> datetime:
    return datetime.now(UTC) - timedelta(seconds=1)


async def test_side_effects_after_the_budget_the_tool_activity_refuses_to_start_past_its_deadline():
    executions.clear()
    registry = default_tool_registry()
    registry.register(flaky_effect)
    tools = ToolActivities(registry)
    spec = registry.get("flaky_effect").spec()  # type: ignore[union-attr]
    request = ToolRequest(
        call=ToolCall(id="c1", name="flaky_effect", arguments={"target": "db"}),
        tool=spec,
        idempotency_key="k",
        deadline=_past(),
    )
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(tools.run_tool, request)
    assert (raised.value.type, raised.value.non_retryable) == (BUDGET_OVER, True)
    assert "budget over" in raised.value.message and "tool call flaky_effect" in raised.value.message
    assert executions == []


async def test_side_effects_after_the_budget_the_model_activity_sends_no_request_past_its_deadline():
    agent = AgentSpec(name="late", scripted=[ScriptedReply(text="should not be produced")])
    request = ModelRequest(
        step=1,
        transcript=TranscriptRef(chain_id="chain-past-deadline"),
        new_messages=[Message(role="user", content="hi")],
        context=AgentContext(agent=agent, tools=[]),
        deadline=_past(),
    )
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(ModelActivities().model_turn, request)
    assert (raised.value.type, raised.value.non_retryable) == (BUDGET_OVER, True)
    assert "the model call of step 1 was not started" in raised.value.message
