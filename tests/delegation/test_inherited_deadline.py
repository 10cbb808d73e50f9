"""A run given a deadline by the run that started it (`RunInput.deadline`) stops there, whatever its own budget,
and keeps it across continue-as-new.

Workflow time has to pass while the run's hour-long tool runs, so each test has a time-skipping server of its own
and releases the server's hold on time itself.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from delegation_team import call

from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, ScriptedReply, SessionSettings
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput

from support.hour_long_tool import hour_long_job, tool_started, unlock_time_skipping


@pytest.fixture
def time_skipping_env(own_time_skipping_env):
    return own_time_skipping_env


def _worker() -> AgentSpec:
    """An agent with no `max_seconds` of its own whose last step is an hour-long job; with `continue_as_new_events`
    low, its chain continues as new before that."""
    return AgentSpec(
        name="worker",
        tools=["echo", "hour_long_job"],
        scripted=[
            *(ScriptedReply(tool_calls=[call("echo", text=text)]) for text in "abcd"),
            ScriptedReply(tool_calls=[call("hour_long_job", topic="qubits")]),
            ScriptedReply(text="unused"),
        ],
        session=SessionSettings(continue_as_new_events=20),
    )


async def test_a_run_continued_as_new_stops_at_the_deadline_it_inherited_though_its_own_budget_has_none(
    time_skipping_env, stalwart, worker_with, task_queue
):
    tool_started.clear()
    deadline = await time_skipping_env.get_current_time() + timedelta(seconds=90)
    async with worker_with(hour_long_job):
        handle = await time_skipping_env.client.start_workflow(
            names.WORKFLOW_TYPE,
            RunInput(agent=_worker(), goal="Work", deadline=deadline),
            id="inherits-a-deadline",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        await tool_started.wait()
        await unlock_time_skipping(time_skipping_env)
        result = await handle.result()
        histories = await stalwart.get(handle.id).histories()
    assert len(histories) >= 2, "the chain continued as new before its deadline"
    assert result.stop_reason == "max_seconds"
    last = result.steps[-1]
    assert (last.tool_name, last.error) == (
        "hour_long_job",
        "cancelled: the deadline of the run that started this one was reached",
    )
