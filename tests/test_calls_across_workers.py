"""Two workers on one task queue, sharing storage: a retried attempt of a tool call that the other worker takes.

A worker that loses the server (a server outage, a network partition) keeps running its calls, while the server
times their attempts out and offers new ones, to whichever worker asks. Another worker taking such an attempt reads
the call's record in the shared storage (`activities/call_records.py`): a call that finished is answered with its
result, one still running is waited for, and neither runs again. A worker that was killed renews no lease, and
its call runs again on the other worker at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import WorkflowHandle

from stalwart.activities.call_records import CallKey, CallRecords
from stalwart.activities.tools.registry import ToolContext, tool
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import ToolResult
from stalwart.contracts.names import RUN_TOOL_ACTIVITY
from stalwart.workers.plugin import default_tool_registry
from stalwart.workers.worker import build_worker

from support.partition import partition
from support.session_crash_tools import entered_by, release
from support.worker_process import assert_alive, result_while_alive, start_worker, stop

TESTS_DIR = Path(__file__).resolve().parent
FIRST, SECOND = "first-worker", "second-worker"

runs: list[tuple[str, str]] = []  # (value, idempotency key) of every execution of `timed_write`
started: dict[str, str] = {}  # value -> activity id of the call that wrote it
release_long = asyncio.Event()


@tool(side_effecting=True)
async def timed_write(value: str, context: ToolContext) -> str:
    """Writes `value`: "short" takes 2.5 s (long enough to leave a lease), "long" until the test lets it go.

    Args:
        value: What to write.
    """
    runs.append((value, context.idempotency_key))
    started[value] = activity.info().activity_id
    if value == "long":
        await release_long.wait()
    else:
        await asyncio.sleep(2.5)
    return f"wrote {value}"


async def _pending_attempt(handle: WorkflowHandle, activity_id: str) -> tuple[int, str] | None:
    """The attempt of a started activity `activity_id` and the worker that took it, or None."""
    description = await handle.describe()
    for pending in description.raw_description.pending_activities:
        if pending.activity_id == activity_id and pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED:
            return pending.attempt, pending.last_worker_identity
    return None


@pytest.mark.slow
async def test_a_call_whose_worker_lost_the_server_is_answered_by_the_other_worker_without_running_again(
    dev_env, task_queue
):
    """The first worker loses the server while it runs two calls; the server times their attempts out and the
    second worker takes the new ones: the short call, finished meanwhile, is answered with its recorded result;
    the long one, still running, is waited for. Each ran once."""
    runs.clear()
    started.clear()
    release_long.clear()
    registry = default_tool_registry()
    registry.register(timed_write)
    agent = AgentSpec(
        name="partitioned",
        tools=["timed_write"],
        scripted=[
            ScriptedReply(
                tool_calls=[
                    ScriptedToolCall(name="timed_write", arguments={"value": "long"}),
                    ScriptedToolCall(name="timed_write", arguments={"value": "short"}),
                ]
            ),
            ScriptedReply(text="wrote long and short"),
        ],
    )
    async with partition(dev_env.address) as proxy:
        first_client = await connect(proxy.address, from_config=False)
        async with build_worker(first_client, task_queue=task_queue, registry=registry, identity=FIRST):
            run = await StalwartClient(dev_env.client, task_queue=task_queue).start(agent, "write both")
            while len(runs) < 2:
                await asyncio.sleep(0.02)
            await proxy.cut()  # the first worker runs both calls, and cannot tell the server anything
            async with build_worker(dev_env.client, task_queue=task_queue, registry=registry, identity=SECOND):
                handle = dev_env.client.get_workflow_handle(run.run_id)
                while (taken := await _pending_attempt(handle, started["long"])) is None or taken[0] < 2:
                    await asyncio.sleep(0.1)
                assert taken[1].startswith(SECOND), taken
                release_long.set()  # the long call ends while the second worker holds its new attempt
                result = await run.result()
                history = await handle.fetch_history()
            await proxy.heal()  # the first worker shuts down through the server
    tool_starts = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    print(f"\nexecutions: {runs}; activity attempts started: {[(a.attempt, a.identity) for a in tool_starts]}")
    assert (result.stop_reason, result.answer) == ("done", "wrote long and short")
    assert sorted(s.result for s in result.steps if s.role == "tool") == ["wrote long", "wrote short"]
    assert sorted(value for value, _ in runs) == ["long", "short"], "each call ran once"
    retried = [a for a in tool_starts if a.attempt > 1]
    assert len(retried) == 2 and all(a.identity.startswith(SECOND) for a in retried)


# -- a killed worker, with another one up ------------------------------------------------------


def _polling(log: Path) -> bool:
    """Whether the worker writing `log` has said it polls: a moment before it does. The task queue's own list of
    pollers is one partition's, and named the second worker after up to a minute."""
    return b"worker polling task queue" in log.read_bytes()


async def _running_tool_call(handle: WorkflowHandle, namespace: str) -> CallKey | None:
    description = await handle.describe()
    for pending in description.raw_description.pending_activities:
        if pending.activity_type.name == RUN_TOOL_ACTIVITY:
            return CallKey(namespace, description.id, description.run_id, pending.activity_id)
    return None


@pytest.mark.slow
async def test_a_call_of_a_killed_worker_runs_again_on_the_other_worker_without_waiting_for_its_lease(
    dev_env, task_queue, tmp_path
):
    """The worker holding a call is killed just after renewing its lease: the other worker, already up, runs the
    call again as soon as the server offers the new attempt. How long that took is printed."""
    logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
    workers = [
        start_worker(dev_env.address, task_queue, log, tools="support.session_crash_tools", tools_dir=TESTS_DIR)
        for log in logs
    ]
    try:
        while not all(_polling(log) for log in logs):
            for worker, log in zip(workers, logs, strict=True):
                assert_alive(worker, log)
            await asyncio.sleep(0.1)
        agent = AgentSpec(
            name="held",
            tools=["hold_until_released"],
            scripted=[
                ScriptedReply(tool_calls=[ScriptedToolCall(name="hold_until_released", arguments={"topic": "x"})]),
                ScriptedReply(text="released x"),
            ],
        )
        run = await StalwartClient(dev_env.client, task_queue=task_queue).start(
            agent, "hold", inputs={"gate_dir": str(tmp_path)}
        )
        handle = dev_env.client.get_workflow_handle(run.run_id)
        while not entered_by(tmp_path) or (key := await _running_tool_call(handle, dev_env.client.namespace)) is None:
            await asyncio.sleep(0.05)
        [(holder_pid, _)] = entered_by(tmp_path)
        records = CallRecords(ToolResult)
        while (record := await records.read(key)) is None or record.renewals < 1:
            await asyncio.sleep(0.02)
        by_pid = {worker.pid: (worker, log) for worker, log in zip(workers, logs, strict=True)}
        holder, _ = by_pid.pop(holder_pid)
        [(survivor, survivor_log)] = by_pid.values()
        os.kill(holder_pid, signal.SIGKILL)  # its lease was renewed a moment ago
        killed_at = time.monotonic()
        holder.wait()
        while len(entered_by(tmp_path)) < 2:
            assert_alive(survivor, survivor_log)
            await asyncio.sleep(0.05)
        print(f"\nthe call ran again on the other worker {time.monotonic() - killed_at:.1f} s after the kill")
        release(tmp_path)
        result = await result_while_alive(run, survivor, survivor_log)
    finally:
        for worker in workers:
            stop(worker)
    assert entered_by(tmp_path) == [(holder_pid, 1), (survivor.pid, 2)]
    assert (result.stop_reason, result.answer) == ("done", "released x")
    assert [s.result for s in result.steps if s.role == "tool"] == ["released x"]
