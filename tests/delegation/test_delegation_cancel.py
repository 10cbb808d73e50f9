"""Cancellation across a delegation: a cancelled parent takes its sub-agent with it;
a sub-agent cancelled alone is feedback.

These tests leave the sub-agent's hour-long tool activity behind on the server
(the child ends without waiting for it), and the time-skipping server holds
time still while any activity is open, so they run on a server of their own.
"""

from __future__ import annotations

import pytest
from delegation_team import blocked_researcher, child_id, delegating, lead

from stalwart.contracts.agent import ScriptedReply
from stalwart.contracts.run import AgentResult

from support.hour_long_tool import hour_long_job, tool_started


@pytest.fixture(scope="module")
def time_skipping_env(isolated_time_skipping_env):
    """A server of this module's own (see tests/conftest.py)."""
    return isolated_time_skipping_env


async def _cancel_parent_while_sub_agent_works(stalwart, worker_with) -> tuple[AgentResult, AgentResult]:
    """The parent's result and its sub-agent's, after the parent was cancelled mid-delegation."""
    sub = blocked_researcher()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(lead(delegating(), ScriptedReply(text="unused"), sub=sub), "Explain")
        await tool_started.wait()
        await handle.cancel()
        return await handle.result(), await stalwart.get(child_id(handle.run_id)).result()


async def test_cancelling_the_parent_cancels_the_sub_agent(stalwart, worker_with):
    result, child = await _cancel_parent_while_sub_agent_works(stalwart, worker_with)
    assert result.stop_reason == "cancelled"
    assert child.stop_reason == "cancelled"
    assert child.steps[-1].tool_name == "hour_long_job"
    assert result.steps[2].error == "cancelled"


async def test_a_cancelled_parent_still_counts_what_its_sub_agent_spent(stalwart, worker_with):
    result, child = await _cancel_parent_while_sub_agent_works(stalwart, worker_with)
    assert child.usage.total_tokens == 20
    assert result.usage.total_tokens == 20 + child.usage.total_tokens


async def test_a_sub_agent_cancelled_on_its_own_is_fed_back_and_the_parent_goes_on(stalwart, worker_with):
    sub = blocked_researcher()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(
            lead(delegating(), ScriptedReply(text="The researcher was stopped."), sub=sub), "Explain"
        )
        await tool_started.wait()
        await stalwart.get(child_id(handle.run_id)).cancel()
        result = await handle.result()
    assert (result.stop_reason, result.answer) == ("done", "The researcher was stopped.")
    assert result.steps[2].error.startswith(
        "Delegation failed: sub-agent researcher stopped with cancelled: its run was cancelled."
    )
