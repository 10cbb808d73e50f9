"""Issue 11, defect 8: SIGTERM drains a real `stalwart worker` process within its grace period in every state:
during an async tool call, a synchronous tool call (a thread that cannot be cancelled) and an MCP server's
hanging handshake; the process exits, its MCP server is stopped, and another worker finishes the run."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporalio import activity

from stalwart.activities import call_records
from stalwart.activities.call_records import CallKey, CallRecord, CallRecords
from stalwart.activities.tools.registry import tool
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, McpStdioServer, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import ToolResult
from stalwart.workers.worker import build_worker, default_registry

from support.processes import still_running
from support.worker_process import start_worker
from wire_server.script import Reply, Stall
from wire_server.server import Script, WireServer

TESTS_DIR = Path(__file__).resolve().parent
GRACE_SECONDS = 1.0
HANG_GUARD_SECONDS = 300  # a hang guard, not a time limit: the measured drain is printed


def _start_worker(address: str, task_queue: str, log: Path) -> subprocess.Popen[bytes]:
    options = ("--grace-seconds", str(GRACE_SECONDS))
    return start_worker(address, task_queue, log, tools="shutdown_tools", tools_dir=TESTS_DIR, options=options)


async def _until(started: Path | Script, worker: subprocess.Popen[bytes], log: Path) -> str:
    """Until the state has begun: a file has content, or the model request reached the wire server."""
    while not (started.requests if isinstance(started, Script) else started.exists() and started.read_text().strip()):
        if worker.poll() is not None:
            raise AssertionError(f"the worker exited by itself ({worker.returncode}):\n{log.read_text()}")
        await asyncio.sleep(0.05)
    return "" if isinstance(started, Script) else started.read_text()


def _agent(state: str, tmp_path: Path, wire: WireServer) -> tuple[AgentSpec, Path | Script]:
    """An agent that, at its first step, is in `state`; and what shows that it is."""
    done = ScriptedReply(text="finished")
    if state == "model-call":
        # A stream that sends its headers and then nothing for an hour; the retry answers.
        script = wire.script(Stall(3600), Reply(text="finished"))
        return AgentSpec(name="model", model="openai:gpt-4.1-mini", base_url=script.openai_base_url), script
    if state == "mcp-handshake":
        pid_file = tmp_path / "mcp.pid"
        server = McpStdioServer(
            name="mute",
            command=sys.executable,
            args=[str(TESTS_DIR / "tools" / "mcp_hanging_server.py"), str(pid_file)],
            handshake_seconds=600,
        )
        return AgentSpec(name="mcp", mcp_servers=[server], scripted=[done]), pid_file
    call = ScriptedToolCall(name=state, arguments={"note": "x"})
    return AgentSpec(name="tools", tools=[state], scripted=[ScriptedReply(tool_calls=[call]), done]), tmp_path / "marks"


@pytest.mark.slow
@pytest.mark.parametrize("state", ["hang_async", "hang_sync", "mcp-handshake", "model-call"])
async def test_worker_sigterm_drains_within_the_grace_period_in_every_state(
    dev_env, task_queue, tmp_path, state, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-shutdown-0123456789")  # the workers' environment
    wire = WireServer()
    await wire.start()
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    spec, started = _agent(state, tmp_path, wire)
    log = tmp_path / "worker-1.log"
    worker = _start_worker(dev_env.address, task_queue, log)
    second = None
    try:
        handle = await stalwart.start(spec, "go", inputs={"marks": str(tmp_path / "marks")})
        seen = await _until(started, worker, log)
        mcp_pid = int(seen) if state == "mcp-handshake" else None
        await asyncio.sleep(0.5)  # well inside the call or the handshake
        sent = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        if state != "mcp-handshake":  # the next worker starts while this one drains, as in a rolling restart
            second = _start_worker(dev_env.address, task_queue, tmp_path / "worker-2.log")
        code = await asyncio.to_thread(worker.wait, HANG_GUARD_SECONDS)
        took = time.monotonic() - sent
        output = log.read_text()
        print(f"\n{state}: SIGTERM -> exit {code} after {took:.2f}s (grace {GRACE_SECONDS:g}s)\n{output}")
        assert code == 143, output
        assert "stopping: no new work is taken" in output and "stopped: drained in" in output
        if mcp_pid is not None:
            assert not still_running(mcp_pid), "the MCP server the worker started is stopped with it"
        # The run was left in a state another worker finishes.
        if second is not None:
            result = await handle.result()
            assert (result.stop_reason, result.answer) == ("done", "finished")
            if state != "model-call":
                assert [s.result for s in result.steps if s.role == "tool"] == [f"{state.removeprefix('hang_')} x"]
        else:
            await handle.cancel()
    finally:
        await wire.stop()
        for process in (worker, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_worker_grace_seconds_out_of_range_is_refused_naming_the_range(value):
    shown = subprocess.run(
        [sys.executable, "-m", "stalwart.client.cli", "worker", "--grace-seconds", value],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert shown.returncode == 2
    assert f"argument --grace-seconds: {value!r} is not a number of seconds from 0 to 3600" in shown.stderr


stopped_calls: list[activity.Info] = []


@tool(side_effecting=True)
async def until_the_worker_stops(note: str) -> str:
    """Runs until the worker stops, which cancels it.

    Args:
        note: What to note.
    """
    stopped_calls.append(activity.info())
    await asyncio.Event().wait()
    return "never"


async def test_a_call_the_worker_stop_cancels_leaves_its_outcome_in_storage_before_the_worker_is_stopped(
    dev_env, task_queue, monkeypatch
):
    """The call ran long enough to leave a lease, so its outcome ("ended": the next attempt runs at once) must
    follow; written in the background, it was dropped when the process ended right after the worker stopped, and
    another worker's attempt waited for the lease to go stale."""
    monkeypatch.setattr(call_records, "LEASE_RENEW_SECONDS", 0.05)
    write = CallRecords.write

    async def slow_outcome(self: CallRecords[ToolResult], key: CallKey, record: CallRecord) -> None:
        if record.state != "running":
            await asyncio.sleep(0.5)  # a storage write that takes a while
        await write(self, key, record)

    monkeypatch.setattr(CallRecords, "write", slow_outcome)
    stopped_calls.clear()
    registry = default_registry()
    registry.register(until_the_worker_stops)
    call = ScriptedToolCall(name="until_the_worker_stops", arguments={"note": "x"})
    spec = AgentSpec(
        name="stopping", tools=["until_the_worker_stops"], scripted=[ScriptedReply(tool_calls=[call]), ScriptedReply()]
    )
    async with build_worker(dev_env.client, task_queue=task_queue, registry=registry):
        await StalwartClient(dev_env.client, task_queue=task_queue).start(spec, "go")
        while not stopped_calls:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # a few lease renewals written
    info = stopped_calls[0]
    key = CallKey.of(info)
    assert key is not None
    record = await CallRecords(ToolResult).read(key)
    await dev_env.client.get_workflow_handle(info.workflow_id or "").terminate()
    assert record is not None and record.state == "ended", record
