"""The parent's wall-clock budget reached while its sub-agent still works:
the parent ends `max_seconds`, the sub-agent is cancelled.

Workflow time has to pass while the sub-agent's hour-long tool runs, and the
time-skipping server holds time still while any activity is open, so each test
runs on a server of its own and releases that hold itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from delegation_team import blocked_researcher, child_id, delegating, lead
from temporalio.client import WorkflowHistory

from stalwart.contracts.agent import ScriptedReply
from stalwart.contracts.run import AgentResult

from support.hour_long_tool import hour_long_job, tool_started, unlock_time_skipping


@pytest.fixture
def time_skipping_env(own_time_skipping_env):
    """A server of each test's own: each needs workflow time to pass (see tests/conftest.py)."""
    return own_time_skipping_env


@dataclass(frozen=True)
class OutOfTime:
    """A parent whose 60 s ran out mid-delegation: its outcome and its sub-agent's, as Temporal recorded them."""

    result: AgentResult
    history: WorkflowHistory
    child_id: str
    child: AgentResult
    child_history: WorkflowHistory


async def _parent_out_of_time_while_sub_agent_works(env, stalwart, worker_with) -> OutOfTime:
    sub = blocked_researcher()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(
            lead(delegating(), ScriptedReply(text="unused"), sub=sub, budgets={"max_seconds": 60}), "Explain"
        )
        await tool_started.wait()
        await unlock_time_skipping(env)
        child = stalwart.get(child_id(handle.run_id))
        return OutOfTime(
            await handle.result(), await handle.history(), child.run_id, await child.result(), await child.history()
        )


async def test_the_parents_wall_clock_budget_ends_it_max_seconds_without_another_model_turn(
    time_skipping_env, stalwart, worker_with
):
    result = (await _parent_out_of_time_while_sub_agent_works(time_skipping_env, stalwart, worker_with)).result
    assert result.stop_reason == "max_seconds"
    assert [s.role for s in result.steps] == ["user", "assistant", "tool"]
    delegation = result.steps[2]
    assert (delegation.tool_name, delegation.error) == ("researcher", "cancelled: wall-clock budget of 60s reached")
    assert 60 <= result.elapsed_seconds < 3600


async def test_the_parents_wall_clock_budget_cancels_its_working_sub_agent(time_skipping_env, stalwart, worker_with):
    outcome = await _parent_out_of_time_while_sub_agent_works(time_skipping_env, stalwart, worker_with)
    [delivered] = [
        e.external_workflow_execution_cancel_requested_event_attributes
        for e in outcome.history.events
        if e.HasField("external_workflow_execution_cancel_requested_event_attributes")
    ]
    assert delivered.workflow_execution.workflow_id == outcome.child_id
    assert any(e.HasField("workflow_execution_cancel_requested_event_attributes") for e in outcome.child_history.events)
    last = outcome.child.steps[-1]
    assert (outcome.child.stop_reason, last.tool_name, last.error) == ("cancelled", "hour_long_job", "cancelled")
