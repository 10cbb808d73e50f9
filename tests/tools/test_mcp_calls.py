"""run_tool calls MCP tools: results and errors reach the model, connections are reused and restarted."""

from __future__ import annotations

import asyncio
import os
import signal

import httpx2
import pytest
from activity_calls import call, describe
from mcp_test_servers import http_demo, stdio_demo
from temporalio.exceptions import ApplicationError

from stalwart.activities.mcp import McpPool, McpServerExited, McpUnavailable
from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools.registry import ToolRegistry
from stalwart.contracts.agent import AgentSpec, McpHttpServer
from stalwart.contracts.messages import ToolResult
from stalwart.contracts.tools import ToolSpec
from stalwart.workers.dev_server import free_port
from stalwart.workers.worker import default_registry


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stdio_tool_result_is_returned_as_text(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
    result = await call(tool_activities, tools["add"], {"a": 2, "b": 40})
    assert (result.is_error, result.content) == (False, "42")


async def test_http_tool_result_is_returned_as_text(tool_activities, http_mcp_url):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[http_demo(http_mcp_url)]))
    result = await call(tool_activities, tools["lookup"], {"topic": "mcp"})
    assert (result.is_error, result.content) == (False, "MCP carries tools over JSON-RPC.")


async def test_renamed_tool_is_called_by_its_name_on_the_server(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo(tools=["kb.search"])]))
    result = await call(tool_activities, tools["kb_search"], {"query": "retries"})
    assert (result.is_error, result.content) == (False, "kb results for retries")


async def test_is_error_result_reaches_the_model_as_a_tool_error(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
    result = await call(tool_activities, tools["fail"], {"reason": "no quota"})
    assert result.is_error
    error = result.error
    assert error.startswith("McpToolError: ") and error.endswith("refused: no quota")


def _server_pid(result: ToolResult) -> int:
    """The process id the demo server's `pid` tool answered: a live process that is not this one."""
    assert not result.is_error, result.content
    pid = int(result.content)
    assert pid != os.getpid() and _pid_alive(pid)
    return pid


async def test_stdio_server_process_is_reused_across_calls(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
    first = _server_pid(await call(tool_activities, tools["pid"]))
    second = _server_pid(await call(tool_activities, tools["pid"]))
    assert first == second


async def test_crashed_stdio_server_is_restarted_on_the_next_call(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
    before = _server_pid(await call(tool_activities, tools["pid"]))
    crashed = await call(tool_activities, tools["crash"])
    assert crashed.is_error
    assert "closed the connection while running 'crash'" in crashed.error
    assert _server_pid(await call(tool_activities, tools["pid"])) != before


async def test_read_only_tool_that_crashed_its_server_is_called_once_more(tool_activities, tmp_path):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
    result = await call(tool_activities, tools["crash_once"], {"marker": str(tmp_path / "crashed")})
    assert (result.is_error, result.content) == (False, "answered after a restart")


async def test_server_that_died_between_calls_is_restarted_without_an_error(tool_activities):
    server = stdio_demo()
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[server]))
    before = int((await call(tool_activities, tools["pid"])).content)
    os.kill(before, signal.SIGKILL)
    while tool_activities.mcp.alive(server):
        await asyncio.sleep(0.01)
    after = await call(tool_activities, tools["pid"])
    assert not after.is_error
    assert int(after.content) != before


async def test_closing_the_tool_activities_stops_stdio_servers():
    # Its own activities: closing the module's shared ones would stop the servers other tests use.
    activities = ToolActivities(default_registry())
    try:
        tools = await describe(activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
        pid = int((await call(activities, tools["pid"])).content)
        assert _pid_alive(pid)
    finally:
        await activities.aclose()
    assert not _pid_alive(pid)


async def test_unreachable_http_server_is_left_to_temporal_to_retry(tool_activities):
    port = free_port()  # bound and closed again: nothing listens there
    server = McpHttpServer(name="down", url=f"http://127.0.0.1:{port}/mcp")
    with pytest.raises(ApplicationError) as caught:
        await call(tool_activities, ToolSpec(name="add", kind="mcp", server=server), {"a": 1, "b": 2})
    assert not caught.value.non_retryable
    assert f"MCP server 'down': cannot reach http://127.0.0.1:{port}/mcp" in caught.value.message


class _DroppingConnection:
    """A live-looking connection whose calls fail with `error` at the transport, counting how often they were tried."""

    alive = True

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0
        self.client = self

    async def call_tool(self, name: str, arguments: dict) -> None:
        self.calls += 1
        raise self.error

    async def close(self) -> None:
        self.alive = False


def _pool_with(server: McpHttpServer, connection: _DroppingConnection) -> McpPool:
    pool = McpPool()
    pool._connections[McpPool.key(server)] = connection  # type: ignore[assignment]
    return pool


async def test_transport_error_after_the_request_was_sent_is_not_retried_for_a_side_effecting_tool():
    server = http_demo("http://127.0.0.1:9/mcp")
    connection = _DroppingConnection(httpx2.ReadTimeout("timed out"))
    activities = ToolActivities(ToolRegistry([]), mcp=_pool_with(server, connection))
    result = await call(
        activities, ToolSpec(name="add", kind="mcp", server=server, side_effecting=True), {"a": 1, "b": 2}
    )
    assert result.is_error  # told to the model, not raised to Temporal for a retry that could add twice
    assert result.error == (
        "McpServerExited: MCP server 'web': lost the connection while running 'add' (ReadTimeout: timed out)"
    )
    assert connection.calls == 1


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        pytest.param(
            httpx2.RemoteProtocolError("peer closed connection"),
            McpServerExited,
            id="after-the-request-was-sent-server-exited",
        ),
        pytest.param(
            httpx2.ConnectError("refused"), McpUnavailable, id="before-the-request-was-sent-left-to-temporal-to-retry"
        ),
    ],
)
async def test_transport_error_is_raised_as_what_it_means_and_drops_the_connection(
    error: Exception, raised: type[Exception]
):
    server = http_demo("http://127.0.0.1:9/mcp")
    pool = _pool_with(server, _DroppingConnection(error))
    with pytest.raises(raised):
        await pool.call_tool(server, "add", {"a": 1, "b": 2})
    assert not pool.alive(server)


async def test_transport_error_after_the_request_was_sent_is_tried_once_more_for_a_read_only_tool():
    server = http_demo("http://127.0.0.1:9/mcp")
    connection = _DroppingConnection(httpx2.ReadTimeout("timed out"))
    pool = _pool_with(server, connection)
    pool.connection = _same(connection)  # type: ignore[method-assign] - the restart hands back the same failing session
    activities = ToolActivities(ToolRegistry([]), mcp=pool)
    result = await call(
        activities, ToolSpec(name="lookup", kind="mcp", server=server, side_effecting=False), {"topic": "x"}
    )
    assert result.is_error
    assert connection.calls == 2


def _same(connection: _DroppingConnection):
    async def connection_for(spec: McpHttpServer) -> _DroppingConnection:
        return connection

    return connection_for
