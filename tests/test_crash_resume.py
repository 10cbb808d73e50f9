"""A run outlives the death of its worker: another worker finishes it; a finished tool call does not run again, the
call in flight does (at least once), and its effect happens once because the tool keys it on its idempotency key."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from crash_tools import attempts_file
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.tools import DEFAULT_HEARTBEAT_TIMEOUT_SECONDS

from support.worker_process import assert_alive, result_while_alive, start_worker, stop

TESTS_DIR = Path(__file__).resolve().parent
VALUES = ["r1", "r2", "r3", "r4"]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _until_a_call_runs_after_a_finished_one(records: Path, worker: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until `worker` has finished at least one call and is in the middle of the next one."""
    while True:
        assert_alive(worker, log)
        recorded = {line.split()[-1] for line in _lines(records)}
        running = [line.split() for line in _lines(attempts_file(records))]
        if recorded and any(value not in recorded and pid == str(worker.pid) for _, value, _, pid in running):
            return
        await asyncio.sleep(0.02)


async def _seconds_until_run_by(worker: subprocess.Popen[bytes], records: Path, since: float) -> float:
    """How long after `since` (time.monotonic) `worker` started a call."""
    while not any(line.split()[-1] == str(worker.pid) for line in _lines(attempts_file(records))):
        await asyncio.sleep(0.05)
    return time.monotonic() - since


def _recorder_agent() -> AgentSpec:
    return AgentSpec(
        name="recorder",
        tools=["append_record"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="append_record", arguments={"value": v})]) for v in VALUES
        ]
        + [ScriptedReply(text="Recorded r1, r2, r3 and r4.")],
    )


@pytest.mark.slow
async def test_run_killed_with_its_worker_is_finished_by_another_and_its_finished_tool_calls_do_not_run_again(
    dev_env, task_queue, tmp_path
):
    records = tmp_path / "records.txt"
    address = dev_env.address
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    first = start_worker(address, task_queue, tmp_path / "worker-1.log", tools="crash_tools", tools_dir=TESTS_DIR)
    second: subprocess.Popen[bytes] | None = None
    try:
        run = await stalwart.start(_recorder_agent(), "Record r1 to r4.", inputs={"records_file": str(records)})
        await _until_a_call_runs_after_a_finished_one(records, first, tmp_path / "worker-1.log")
        os.kill(first.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        first.wait()
        finished_before_kill = _lines(records)
        assert (
            await dev_env.client.get_workflow_handle(run.run_id).describe()
        ).status == WorkflowExecutionStatus.RUNNING
        second = start_worker(address, task_queue, tmp_path / "worker-2.log", tools="crash_tools", tools_dir=TESTS_DIR)
        recovered = asyncio.ensure_future(_seconds_until_run_by(second, records, killed_at))
        result = await result_while_alive(run, second, tmp_path / "worker-2.log")
        print(f"\nthe call in flight ran again {await recovered:.1f} s after its worker was killed")
    finally:
        stop(first)
        stop(second)

    assert result.stop_reason == "done"
    assert result.answer == "Recorded r1, r2, r3 and r4."
    assert [s.result for s in result.steps if s.role == "tool"] == [f"recorded {v}" for v in VALUES]

    # Every effect happened exactly once, in order, under distinct idempotency keys.
    lines = _lines(records)
    assert [line.split()[-1] for line in lines] == VALUES
    assert len({line.split()[0] for line in lines}) == len(VALUES)
    assert 1 <= len(finished_before_kill) < len(VALUES)

    # Calls finished by the killed worker never ran again; the new worker ran the rest.
    attempts = [line.split() for line in _lines(attempts_file(records))]
    runs_per_key = Counter(key for key, *_ in attempts)
    assert all(runs_per_key[line.split()[0]] == 1 for line in finished_before_kill)
    assert any(pid == str(second.pid) for *_, pid in attempts)

    # The history agrees: each tool activity was scheduled once and completed once.
    history = await dev_env.client.get_workflow_handle(run.run_id).fetch_history()
    tool_activities = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_tool"
    }
    completions = Counter(
        e.activity_task_completed_event_attributes.scheduled_event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    )
    assert len(tool_activities) == len(VALUES)
    assert all(completions[event_id] == 1 for event_id in tool_activities)
    # The killed worker's call was given up on after its heartbeat timeout, the default's few seconds.
    assert {
        e.activity_task_scheduled_event_attributes.heartbeat_timeout.ToTimedelta().total_seconds()
        for e in history.events
        if e.event_id in tool_activities
    } == {DEFAULT_HEARTBEAT_TIMEOUT_SECONDS}
