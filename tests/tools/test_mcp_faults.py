"""Issue 11, defects 1 and 2: MCP failures name the server, what was started or reached, and the cause; a config
error is not retried; the handshake has a deadline and a cancelled one stops at once; a streamable-HTTP server that
restarted and rejects the old session (404 from Python servers, 400 from TypeScript ones) is reconnected to."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from activity_calls import call, describe
from mcp_test_servers import http_demo
from temporalio.api.enums.v1 import EventType
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import ActivityEnvironment

from stalwart.activities.tool_activities import ToolActivities
from stalwart.contracts.activities import DescribeToolsRequest
from stalwart.contracts.agent import AgentSpec, McpHttpServer, McpStdioServer, ScriptedReply
from stalwart.workers.dev_server import free_port
from stalwart.workers.worker import default_registry

from support.processes import listening_process, still_running

HERE = Path(__file__).resolve().parent
HANGING = HERE / "mcp_hanging_server.py"


def hanging(tmp_path: Path, **fields: object) -> tuple[McpStdioServer, Path]:
    pid_file = tmp_path / "hanging.pid"
    return McpStdioServer(name="mute", command=sys.executable, args=[str(HANGING), str(pid_file)], **fields), pid_file


class _NotMcp(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = b"<html><body>Method Not Allowed</body></html>"
        self.send_response(405)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def not_an_mcp_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotMcp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


async def _attempts_of_describe(handle) -> list[int]:
    history = await handle.history()
    return [
        event.activity_task_started_event_attributes.attempt
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


# -- defect 1 ---------------------------------------------------------------------


async def test_mcp_connection_failure_names_the_server_the_url_and_the_cause(stalwart, worker_with):
    with not_an_mcp_server() as url:
        spec = AgentSpec(
            name="a", mcp_servers=[McpHttpServer(name="notes", url=url)], scripted=[ScriptedReply(text="x")]
        )
        async with worker_with():
            handle = await stalwart.start(spec, "go")
            result = await handle.result()
            attempts = await _attempts_of_describe(handle)
    print(f"\nrun error: {result.error}; describe attempts: {attempts}")
    assert attempts == [1], "an endpoint that answers 405 will not heal: not retried"
    assert result.stop_reason == "error"
    error = result.error or ""
    assert "'notes'" in error and url in error
    assert "refused the MCP handshake (answered HTTP 405 (text/html) to POST" in error
    assert "TaskGroup" not in error and "ExceptionGroup" not in error


async def test_an_mcp_url_no_http_client_can_open_is_a_config_error_that_is_not_retried(tool_activities):
    server = McpHttpServer(name="notes", url="http://\u3002.example/mcp")  # an IDNA host nothing can encode
    with pytest.raises(ApplicationError) as caught:
        await describe(tool_activities, AgentSpec(name="a", mcp_servers=[server]))
    message = caught.value.message
    assert "MCP server 'notes'" in message and "Invalid IDNA hostname" in message and "Fix `url`" in message
    assert caught.value.non_retryable


async def test_mcp_stdio_failure_names_the_command_and_the_cause(tool_activities):
    server = McpStdioServer(name="broken", command=sys.executable, args=["-c", "import sys; sys.exit(3)"])
    with pytest.raises(ApplicationError) as caught:
        await describe(tool_activities, AgentSpec(name="a", mcp_servers=[server]))
    message = caught.value.message
    assert "MCP server 'broken'" in message and "sys.exit(3)" in message
    assert "stopped before the MCP handshake finished" in message and "TaskGroup" not in message
    assert caught.value.non_retryable


async def test_mcp_unset_header_variable_is_a_config_error_that_is_not_retried(stalwart, worker_with, monkeypatch):
    monkeypatch.delenv("STALWART_TEST_UNSET_TOKEN", raising=False)
    server = McpHttpServer(
        name="notes", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer ${STALWART_TEST_UNSET_TOKEN}"}
    )
    spec = AgentSpec(name="a", mcp_servers=[server], scripted=[ScriptedReply(text="x")])
    async with worker_with():
        handle = await stalwart.start(spec, "go")
        result = await handle.result()
        attempts = await _attempts_of_describe(handle)
    print(f"\nrun error: {result.error}; describe attempts: {attempts}")
    assert result.stop_reason == "error"
    error = result.error or ""
    assert "MCP server 'notes': header Authorization" in error and "STALWART_TEST_UNSET_TOKEN" in error
    assert "Recursion" not in error
    assert attempts == [1], "a configuration error is final: not retried"


async def test_mcp_stdio_handshake_has_a_deadline_that_names_the_server(tmp_path):
    server, pid_file = hanging(tmp_path, handshake_seconds=1)
    activities = ToolActivities(default_registry())
    try:
        with pytest.raises(ApplicationError) as caught:
            await describe(activities, AgentSpec(name="a", mcp_servers=[server]))
    finally:
        await activities.aclose()
    message = caught.value.message
    print(f"\nfirst attempt: {message}")
    assert "MCP server 'mute'" in message and str(HANGING) in message
    assert "did not answer the MCP handshake within 1s" in message and "handshake_seconds" in message
    assert not caught.value.non_retryable, "tried once more: a slow first start may be quick the second time"
    pid = int(pid_file.read_text())
    assert not still_running(pid), "the server that never answered is stopped"


@contextmanager
def a_silent_http_server() -> Iterator[str]:
    """Accepts connections and reads requests, and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        listener.close()
        for connection in held:
            connection.close()


async def test_mcp_http_handshake_has_a_deadline_that_names_the_url():
    activities = ToolActivities(default_registry())
    try:
        with a_silent_http_server() as url, pytest.raises(ApplicationError) as caught:
            server = McpHttpServer(name="silent", url=url, handshake_seconds=1)
            await describe(activities, AgentSpec(name="a", mcp_servers=[server]))
    finally:
        await activities.aclose()
    message = caught.value.message
    print(f"\n{message}")
    assert f"MCP server 'silent': {url} did not answer the MCP handshake within 1s" in message


async def test_mcp_handshake_deadline_is_final_on_the_second_attempt(tmp_path):
    server, _ = hanging(tmp_path, handshake_seconds=1)
    activities = ToolActivities(default_registry())
    env = ActivityEnvironment()
    env.info = env.info.__class__(**{**env.info.__dict__, "attempt": 2})
    try:
        with pytest.raises(ApplicationError) as caught:
            await env.run(
                activities.describe_tools, DescribeToolsRequest(agent=AgentSpec(name="a", mcp_servers=[server]))
            )
    finally:
        await activities.aclose()
    assert caught.value.non_retryable


async def test_mcp_cancelled_handshake_stops_at_once_and_stops_the_server(tmp_path):
    """What a worker's shutdown does to a tool call whose server hangs in its handshake: the activity is cancelled,
    and must end (and stop the server) instead of waiting for the handshake that never comes."""
    server, pid_file = hanging(tmp_path, handshake_seconds=600)
    activities = ToolActivities(default_registry())
    env = ActivityEnvironment()
    request = DescribeToolsRequest(agent=AgentSpec(name="a", mcp_servers=[server]))
    running = asyncio.ensure_future(env.run(activities.describe_tools, request))
    while not pid_file.exists() or not pid_file.read_text():
        await asyncio.sleep(0.05)
    pid = int(pid_file.read_text())
    started = time.monotonic()
    env.cancel()
    with pytest.raises((CancelledError, asyncio.CancelledError)):
        await running
    took = time.monotonic() - started
    await activities.aclose()
    print(f"\ncancelled handshake ended {took:.2f}s after the cancel")
    assert not still_running(pid)


# -- defect 2 ---------------------------------------------------------------------


@contextmanager
def http_server_process(port: int, unknown_session_status: int) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    argv = [sys.executable, str(HERE / "mcp_http_server.py"), str(port), str(unknown_session_status)]
    with listening_process(argv, port, env=env) as process:
        yield process


@pytest.mark.parametrize("status", [404, 400], ids=["python-404", "typescript-400"])
async def test_http_mcp_server_restart_is_reconnected_on_session_rejection(status: int, caplog):
    port = free_port()
    server = http_demo(f"http://127.0.0.1:{port}/mcp", name="everything")
    agent = AgentSpec(name="a", mcp_servers=[server])
    activities = ToolActivities(default_registry())
    try:
        with http_server_process(port, status):
            tools = await describe(activities, agent)
            before = await call(activities, tools["pid"])
        with caplog.at_level(logging.WARNING, logger="stalwart.activities.mcp.pool"):
            with http_server_process(port, status):
                listed_again = await describe(activities, agent)
                after = await call(activities, tools["pid"])
            with http_server_process(port, status):
                # A restart noticed first by a tool call (not a listing) is reconnected too.
                called = await call(activities, tools["add"], {"a": 2, "b": 3})
    finally:
        await activities.aclose()
    assert sorted(listed_again) == sorted(tools)
    assert not before.is_error and not after.is_error and before.content != after.content
    assert (called.is_error, called.content) == (False, "5")
    warnings = [r.getMessage() for r in caplog.records if "rejected its session" in r.getMessage()]
    print("\n" + "\n".join(warnings))
    assert len(warnings) == 2 and all("'everything'" in w and str(port) in w for w in warnings)


def test_stalwart_check_shows_the_final_tool_names(tmp_path):
    """`stalwart check` lists the names the model will see: the MCP `echo` renamed only because the agent uses the
    worker's `echo`, the server's other tools under their own names."""
    agent = tmp_path / "clash.toml"
    agent.write_text(
        'name = "clash"\nmodel = "scripted"\ntools = ["echo"]\n\n'
        f'[[mcp_servers]]\nname = "everything"\ncommand = "python"\nargs = [{str(HERE / "mcp_demo_server.py")!r}]\n'
        'tools = ["echo", "add"]\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    shown = subprocess.run(
        [sys.executable, "-m", "stalwart.client.cli", "check", str(agent)], capture_output=True, text=True, env=env
    )
    print(shown.stderr)
    assert shown.returncode == 0, shown.stderr
    lines = [line.strip() for line in shown.stderr.splitlines()]
    assert "echo  (a tool the worker registers)" in lines
    assert "everything__echo  (MCP server 'everything', renamed from 'echo' to avoid a clash)" in lines
    assert "add  (MCP server 'everything')" in lines
