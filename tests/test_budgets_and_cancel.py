"""Wall-clock budget, cancellation and the live state query, on the time-skipping server."""

from __future__ import annotations

import pytest

from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall

from support.hour_long_tool import hour_long_job, tool_started, unlock_time_skipping


@pytest.fixture(scope="module")
def time_skipping_env(isolated_time_skipping_env):
    """A server of this module's own: its tests need workflow time to pass (see tests/conftest.py)."""
    return isolated_time_skipping_env


def hour_long_agent(**budgets: object) -> AgentSpec:
    return AgentSpec(
        name="patient",
        tools=["hour_long_job"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="hour_long_job", arguments={"topic": "x"})]),
            ScriptedReply(text="never reached"),
        ],
        budgets=Budgets(**budgets),
    )


async def test_wall_clock_budget_cuts_off_an_hour_long_tool_and_ends_max_seconds(
    time_skipping_env, stalwart, worker_with
):
    tool_started.clear()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(hour_long_agent(max_seconds=60), "work")
        await tool_started.wait()
        await unlock_time_skipping(time_skipping_env)
        result = await handle.result()
        history = await handle.history()
    assert result.stop_reason == "max_seconds"
    tool_step = result.steps[-1]
    assert tool_step.tool_name == "hour_long_job"
    assert tool_step.error == "cancelled: wall-clock budget of 60s reached"
    assert 60 <= result.elapsed_seconds < 3600
    assert any(e.HasField("activity_task_cancel_requested_event_attributes") for e in history.events)


async def test_cancelling_a_run_ends_it_cancelled_with_the_steps_so_far(stalwart, worker_with):
    tool_started.clear()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(hour_long_agent(), "work")
        await tool_started.wait()
        await handle.cancel()
        result = await handle.result()
    assert result.stop_reason == "cancelled"
    assert [s.role for s in result.steps] == ["user", "assistant", "tool"]
    assert result.steps[-1].error == "cancelled"


async def test_state_query_shows_the_live_step_log_while_a_tool_runs(stalwart, worker_with):
    tool_started.clear()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(hour_long_agent(), "work")
        await tool_started.wait()
        state = await handle.state()
        await handle.cancel()
        await handle.result()
    assert state.status == "running"
    assert state.agent == "patient"
    running = state.steps[-1]
    assert (running.role, running.tool_name, running.ended_at) == ("tool", "hour_long_job", None)
    assert state.usage.total_tokens == 20
