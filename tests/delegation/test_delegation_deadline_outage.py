"""A sub-agent stops at its parent's deadline even when no worker ran the parent at that moment.

The worker dies while the sub-agent's tool runs and comes back after the parent's `max_seconds`: the call that was
in flight is offered again, and before deadlines were inherited the sub-agent (whose own budget had hours left) ran
it, then asked its model, after the parent's deadline. The sub-agent's run carries the parent's deadline
(`RunInput.deadline`), so none of its calls starts after it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from delegation_team import call, child_id, lead, researcher
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from stalwart.client.api import StalwartClient
from stalwart.contracts import names
from stalwart.contracts.agent import ScriptedReply

from support.worker_process import assert_alive, result_while_alive, start_worker, stop

HERE = Path(__file__).resolve().parent
MAX_SECONDS = 5
"""The parent's budget from its first workflow task: the sub-agent's tool call starts about 0.3 s into it, and the
worker is killed then; the rest of it only waits for the deadline."""


def _call_times(calls_file: Path) -> list[datetime]:
    lines = calls_file.read_text().splitlines() if calls_file.exists() else []
    return [datetime.fromtimestamp(float(line.split()[0]), UTC) for line in lines]


async def _first_call(calls_file: Path, worker: subprocess.Popen[bytes], log: Path) -> None:
    while not _call_times(calls_file):
        assert_alive(worker, log)
        await asyncio.sleep(0.05)


def _deadline(history: WorkflowHistory) -> datetime:
    """The parent's deadline: its turn began in its first workflow task (`workflow.now()` is that task's start)."""
    started = next(e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    return started.event_time.ToDatetime(UTC) + timedelta(seconds=MAX_SECONDS)


def _model_calls_started(history: WorkflowHistory) -> list[datetime]:
    """When each model call of a run that went through started (a call refused for the deadline did not)."""
    scheduled = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == names.MODEL_ACTIVITY
    }
    started = {
        e.event_id: e.event_time.ToDatetime(UTC)
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id in scheduled
    }
    return [
        started[e.activity_task_completed_event_attributes.started_event_id]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and e.activity_task_completed_event_attributes.scheduled_event_id in scheduled
    ]


@pytest.mark.slow
async def test_no_call_of_a_sub_agent_starts_after_its_parents_deadline_passed_while_no_worker_ran(
    dev_env, task_queue, tmp_path
):
    calls_file = tmp_path / "calls.txt"
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    sub = researcher(
        ScriptedReply(tool_calls=[call("slow_lookup", topic="qubits")]),
        ScriptedReply(text="Nothing found."),
        tools=["slow_lookup"],
    )
    agent = lead(
        ScriptedReply(tool_calls=[call("researcher", task="Find quantum info")]),
        ScriptedReply(text="unused"),
        sub=sub,
        budgets={"max_seconds": MAX_SECONDS},
    )
    first = start_worker(dev_env.address, task_queue, tmp_path / "worker-1.log", tools="deadline_tools", tools_dir=HERE)
    second: subprocess.Popen[bytes] | None = None
    try:
        run = await stalwart.start(agent, "Explain", inputs={"calls_file": str(calls_file)})
        await _first_call(calls_file, first, tmp_path / "worker-1.log")
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        deadline = _deadline(await run.history())
        while datetime.now(UTC) < deadline + timedelta(seconds=2):  # no worker at the parent's deadline
            await asyncio.sleep(0.1)
        second = start_worker(
            dev_env.address, task_queue, tmp_path / "worker-2.log", tools="deadline_tools", tools_dir=HERE
        )
        result = await result_while_alive(run, second, tmp_path / "worker-2.log")
        child = stalwart.get(child_id(run.run_id))
        await child.result()
        child_history = await child.history()
    finally:
        stop(first)
        stop(second)

    assert result.stop_reason == "max_seconds"
    tool_calls = _call_times(calls_file)
    assert tool_calls[0] < deadline, "the sub-agent's tool was running at the parent's deadline"
    assert [at for at in tool_calls if at >= deadline] == []
    assert [at for at in _model_calls_started(child_history) if at >= deadline] == []
