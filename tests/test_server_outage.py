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
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stalwart.activities.tools.registry import Tool, ToolContext, tool
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


@dataclass
class Outage:
    """A run whose one tool call was working when its server died, once the server is back and the run is over."""

    result: AgentResult
    attempts: list[int]
    """The attempts of the run's activities, as history recorded them."""
    runs: list[str]
    """The idempotency key of every execution of the tool."""
    logged: list[logging.LogRecord]
    """What the run's activities logged at INFO and above."""


def _slow_write(seconds_of_work: float, runs: list[str], started: asyncio.Event) -> Tool:
    @tool(side_effecting=True)
    async def slow_write(value: str, context: ToolContext) -> str:
        """Writes `value` somewhere, taking a few seconds.

        Args:
            value: What to write.
        """
        runs.append(context.idempotency_key)
        started.set()
        await asyncio.sleep(seconds_of_work)
        return f"wrote {value}"

    return slow_write


def _kill(server: DevServer) -> None:
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()


class _ActivityLog(logging.Handler):
    """The records `temporalio.activity` logs, by the task queue of the activity that logged them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.by_queue: dict[str, list[logging.LogRecord]] = defaultdict(list)

    def emit(self, record: logging.LogRecord) -> None:
        self.by_queue[getattr(record, "temporal_activity", {}).get("task_queue", "")].append(record)


async def _write_across_an_outage(
    folder: Path, task_queue: str, log: _ActivityLog, seconds_of_work: float, outage_seconds: float
) -> Outage:
    """A run on its own server whose one tool call works `seconds_of_work` from the moment the server dies for
    `outage_seconds`."""
    runs: list[str] = []
    started = asyncio.Event()
    port, db = free_port(), folder / "temporal.db"
    server = DevServer(port=port, ui_port=None, db_file=db)
    await server.start()
    again: DevServer | None = None
    try:
        client = await connect(server.address, from_config=False)
        await ensure_search_attributes(client)
        registry = default_tool_registry()
        registry.register(_slow_write(seconds_of_work, runs, started))
        agent = AgentSpec(
            name="outage",
            tools=["slow_write"],
            scripted=[
                ScriptedReply(tool_calls=[ScriptedToolCall(name="slow_write", arguments={"value": "v1"})]),
                ScriptedReply(text="wrote v1"),
            ],
        )
        async with build_worker(client, task_queue=task_queue, registry=registry):
            handle = await StalwartClient(client, task_queue=task_queue).start(agent, "write v1")
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
    return Outage(result, attempts, runs, log.by_queue[task_queue])


@pytest.fixture(scope="module")
async def outages(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, asyncio.Task[Outage]]]:
    """Both outages at once, each with its own server, worker and tool, for the tests below to await: each is
    mostly waiting for its server to come back, so together they take as long as the longer one."""
    log = _ActivityLog()
    logger = logging.getLogger("temporalio.activity")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(log)
    scenarios = {
        "finished": (1, OUTAGE_SECONDS),  # finishes while the server is down
        "running": (RUNNING_CALL_OUTAGE_SECONDS + 6, RUNNING_CALL_OUTAGE_SECONDS),  # still runs when it is back
    }
    tasks = {
        name: asyncio.create_task(
            _write_across_an_outage(tmp_path_factory.mktemp(name), f"outage-{name}", log, work, outage)
        )
        for name, (work, outage) in scenarios.items()
    }
    try:
        yield tasks
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        logger.removeHandler(log)
        logger.setLevel(level)


@pytest.mark.slow
async def test_server_outage_a_tool_call_finished_during_a_20_s_outage_is_not_run_again(outages):
    outage = await outages["finished"]
    assert (outage.result.stop_reason, outage.result.answer) == ("done", "wrote v1")
    assert max(outage.attempts) > 1, "the worker gave up reporting the result, and the call came back as a new attempt"
    assert len(outage.runs) == 1


@pytest.mark.slow
async def test_server_outage_a_tool_call_still_running_after_a_10_s_outage_is_joined_not_run_again(outages):
    """The server comes back and times out the attempt (its heartbeats could not reach it): the new attempt, on the
    same worker, waits for the call still running there. The call ends 6 s after the server is back; the new
    attempt came 1.3 s after it here."""
    outage = await outages["running"]
    assert (outage.result.stop_reason, outage.result.answer) == ("done", "wrote v1")
    assert max(outage.attempts) > 1, "the server gave up on the attempt it could not hear from"
    joined = [r for r in outage.logged if "still running on this worker" in r.getMessage()]
    assert joined, "the new attempt came while the call still ran, and waited for it"
    assert len(outage.runs) == 1
