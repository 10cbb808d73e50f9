"""Finished tool calls and a server outage (issue 11, defect 11).

Temporal promises at-least-once for activities: a tool call may run again after a fault, and a
side-effecting tool must use its idempotency key (docs/agents-and-tools.md, "What a tool call can rely on after a
fault").
What Stalwart adds: a call that finished while the server was down is not run again. Its worker reports the
result for about 10 s and then gives up (the SDK's limit), so when the server is back the call times out on
its heartbeats (5 s, so a killed worker's call soon runs elsewhere) and comes back as a new attempt; the worker
that finished it answers that attempt with the result it kept, without running the tool again. A call still
running when the server is back times out alike, and its new attempt joins it on that worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path

import pytest

from stalwart.activities.tools.registry import ToolContext, tool
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.run import AgentResult
from stalwart.workers.dev_server import DevServer, free_port
from stalwart.workers.plugin import default_tool_registry
from stalwart.workers.search_attributes import ensure_search_attributes
from stalwart.workers.worker import build_worker

OUTAGE_SECONDS = 20
"""Longer than the worker reports a finished call's result (the SDK retries for at most 10 s after the call ends, a
second into the outage): the result is lost, which the test checks (a new attempt came). A longer outage adds only
waiting."""
RUNNING_CALL_OUTAGE_SECONDS = 10
"""Longer than the heartbeat timeout (5 s), which is what times out the attempt of a call still running: a longer
outage adds only waiting (the test checks that the server did give up on the attempt)."""
started = asyncio.Event()
runs: list[str] = []  # the idempotency key of every execution of `slow_write`
work_seconds = 1.0


@tool(side_effecting=True)
async def slow_write(value: str, context: ToolContext) -> str:
    """Writes `value` somewhere, taking a few seconds.

    Args:
        value: What to write.
    """
    runs.append(context.idempotency_key)
    started.set()
    await asyncio.sleep(work_seconds)
    return f"wrote {value}"


def _kill(server: DevServer) -> None:
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()


async def _write_across_an_outage(
    tmp_path: Path, seconds_of_work: float, outage_seconds: float = OUTAGE_SECONDS
) -> tuple[AgentResult, list[int]]:
    """A run whose one tool call works `seconds_of_work` from the moment the server dies for `outage_seconds`: its
    result, and the attempts of its activities as history recorded them."""
    global work_seconds
    work_seconds = seconds_of_work
    runs.clear()
    started.clear()
    port, db = free_port(), tmp_path / "temporal.db"
    server = DevServer(port=port, ui_port=None, db_file=db)
    await server.start()
    again: DevServer | None = None
    try:
        client = await connect(server.address, from_config=False)
        await ensure_search_attributes(client)
        registry = default_tool_registry()
        registry.register(slow_write)
        agent = AgentSpec(
            name="outage",
            tools=["slow_write"],
            scripted=[
                ScriptedReply(tool_calls=[ScriptedToolCall(name="slow_write", arguments={"value": "v1"})]),
                ScriptedReply(text="wrote v1"),
            ],
        )
        async with build_worker(client, task_queue="outage", registry=registry):
            handle = await StalwartClient(client, task_queue="outage").start(agent, "write v1")
            await started.wait()
            _kill(server)  # the server dies while the tool runs
            await asyncio.sleep(outage_seconds)
            again = DevServer(port=port, ui_port=None, db_file=db)
            await again.start()
            result = await handle.result()
            history = await client.get_workflow_handle(handle.run_id).fetch_history()
    finally:
        if again is not None:
            again.stop()
        server.stop()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    print(f"\ntool executions across a {outage_seconds} s server outage: {len(runs)}; activity attempts: {attempts}")
    return result, attempts


@pytest.mark.slow
async def test_server_outage_a_tool_call_finished_during_a_20_s_outage_is_not_run_again(tmp_path: Path):
    result, attempts = await _write_across_an_outage(tmp_path, seconds_of_work=1)  # finishes while the server is down
    assert (result.stop_reason, result.answer) == ("done", "wrote v1")
    assert max(attempts) > 1, "the worker gave up reporting the result, and the call came back as a new attempt"
    assert len(runs) == 1


@pytest.mark.slow
async def test_server_outage_a_tool_call_still_running_after_a_10_s_outage_is_joined_not_run_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """The server comes back and times out the attempt (its heartbeats could not reach it): the new attempt, on the
    same worker, waits for the call still running there. The call ends 6 s after the server is back; the new
    attempt came 1.3 s after it here."""
    outage = RUNNING_CALL_OUTAGE_SECONDS
    with caplog.at_level(logging.INFO, logger="temporalio.activity"):
        result, attempts = await _write_across_an_outage(tmp_path, seconds_of_work=outage + 6, outage_seconds=outage)
    assert (result.stop_reason, result.answer) == ("done", "wrote v1")
    assert max(attempts) > 1, "the server gave up on the attempt it could not hear from"
    joined = [r for r in caplog.records if "still running on this worker" in r.getMessage()]
    assert joined, "the new attempt came while the call still ran, and waited for it"
    assert len(runs) == 1
