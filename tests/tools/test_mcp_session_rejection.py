"""Issue 43, item 4: a streamable-HTTP MCP server that restarted answers the worker's old session as the TypeScript
SDK's servers do (400 "Server not initialized" or 404 "Session not found", no content type, a JSON-RPC error whose
id is null), and the worker opens a new session and asks once more: for a listing, and for a call the server cannot
have run. A call that failed after the server may have run it is not asked again.

Each test runs a real server process (tests/support/mcp_ts_server.py) and restarts it for real: the process is
killed and a new one serves the same port, knowing none of the old sessions. The server counts each run of a tool
in a file, across restarts.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from activity_calls import call, describe
from temporalio.exceptions import ApplicationError

from stalwart.activities.tool_activities import ToolActivities
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, McpHttpServer, ScriptedReply, ScriptedToolCall
from stalwart.contracts.tools import ToolSpec
from stalwart.workers.dev_server import free_port
from stalwart.workers.worker import build_worker, default_registry

from support.mcp_ts_server import executions, ts_mcp_server

ANSWERS = {"argvalues": [400, 404], "ids": ["400-not-initialized", "404-session-not-found"], "indirect": True}
"""Both ways a TypeScript server answers a session it does not know: each test runs against each."""


class _Served:
    """One agent's view of the test server: its port, its tools as the worker listed them, its count of runs."""

    def __init__(self, tmp_path: Path, answer: int) -> None:
        self.port = free_port()
        self.answer = answer
        self.counts = tmp_path / "runs.txt"
        self.agent = AgentSpec(
            name="a", mcp_servers=[McpHttpServer(name="ts", url=f"http://127.0.0.1:{self.port}/mcp")]
        )
        self.activities = ToolActivities(default_registry())
        self.tools: dict[str, ToolSpec] = {}

    def process(self, remembers: bool = True) -> AbstractContextManager[subprocess.Popen[bytes]]:
        """A new server process on the same port, knowing no session of an earlier one (nor, unless it
        `remembers`, of its own)."""
        return ts_mcp_server(self.port, self.answer, self.counts, remembers)

    async def session_opened(self) -> None:
        """List the tools and call one, so the worker holds a session the next process will not know."""
        with self.process():
            self.tools = await describe(self.activities, self.agent)
            opened = await call(self.activities, self.tools["count"], {"label": "opening"})
        assert (opened.is_error, opened.content) == (False, "1")


@pytest.fixture
async def served(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[_Served]:
    state = _Served(tmp_path, request.param)
    try:
        yield state
    finally:
        await state.activities.aclose()


def _rejections(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "rejected its session" in r.getMessage()]


@pytest.mark.parametrize("served", **ANSWERS)
async def test_listing_after_a_server_restart_opens_a_new_session(served: _Served, caplog):
    await served.session_opened()
    with caplog.at_level(logging.WARNING, logger="stalwart.activities.mcp.pool"), served.process():
        listed_again = await describe(served.activities, served.agent)
    assert sorted(listed_again) == sorted(served.tools)
    assert len(_rejections(caplog)) == 1


@pytest.mark.parametrize("served", **ANSWERS)
async def test_call_after_a_server_restart_runs_once_on_a_new_session(served: _Served, caplog):
    await served.session_opened()
    with caplog.at_level(logging.WARNING, logger="stalwart.activities.mcp.pool"), served.process():
        called = await call(served.activities, served.tools["count"], {"label": "after restart"})
        next_call = await call(served.activities, served.tools["count"], {"label": "next"})
    assert (called.is_error, called.content) == (False, "1"), called.error
    assert (next_call.is_error, next_call.content) == (False, "1"), next_call.error
    assert executions(served.counts, "after restart") == 1
    assert len(_rejections(caplog)) == 1


@pytest.mark.parametrize("served", **ANSWERS)
async def test_calls_waiting_on_a_restarted_server_each_run_once(served: _Served):
    """Calls made together on the session the server forgot: each is rejected, and each runs once on a new one."""
    await served.session_opened()
    labels = [f"waiting {n}" for n in range(3)]
    with served.process():
        results = await asyncio.gather(
            *(call(served.activities, served.tools["count"], {"label": label}) for label in labels)
        )
    assert [(r.is_error, r.content) for r in results] == [(False, "1")] * 3, [r.error for r in results]
    assert [executions(served.counts, label) for label in labels] == [1, 1, 1]


@pytest.mark.parametrize("served", **ANSWERS)
@pytest.mark.parametrize(
    ("tool", "told"),
    [
        pytest.param("record_then_500", "McpToolError: Server returned an error response", id="500-after-running"),
        pytest.param(
            "record_then_exit",
            "McpServerExited: MCP server 'ts' closed the connection while running 'record_then_exit'",
            id="connection-lost-after-running",
        ),
    ],
)
async def test_call_that_failed_after_the_server_ran_it_is_not_asked_again(served: _Served, tool: str, told: str):
    """After a restart the rejected call is asked again on a new session; the server runs it, then fails (a 500, or
    it dies with the call's connection open). That failure may follow the tool's effect: the model is told, and the
    tool is not run a second time."""
    await served.session_opened()
    with served.process():
        result = await call(served.activities, served.tools[tool], {"label": "charged"})
    assert result.is_error
    assert result.error.startswith(told), result.error
    assert executions(served.counts, "charged") == 1


@pytest.mark.parametrize("served", **ANSWERS)
async def test_server_that_refuses_the_new_session_too_is_asked_once_more_only(served: _Served):
    """A server that forgets every session, as one behind a load balancer that spreads a session's requests over
    servers that do not share them: the listing and the call are each asked once more, on one new session, then
    left to Temporal to retry with backoff. The call never ran."""
    await served.session_opened()
    with served.process(remembers=False):
        opened = executions(served.counts, "initialize")
        with pytest.raises(ApplicationError) as listing:
            await describe(served.activities, served.agent)
        listing_opened = executions(served.counts, "initialize") - opened
        with pytest.raises(ApplicationError) as calling:
            await call(served.activities, served.tools["count"], {"label": "refused"})
        call_opened = executions(served.counts, "initialize") - opened - listing_opened
    for caught in (listing, calling):
        assert not caught.value.non_retryable
        assert "rejected a new session too (HTTP " in caught.value.message, caught.value.message
    assert executions(served.counts, "refused") == 0
    # The listing's stale session was refused, so it opened one; the call found that one retired, opened one, and
    # asked once more on another.
    assert (listing_opened, call_opened) == (1, 2)


@pytest.mark.slow
@pytest.mark.parametrize("answer", ANSWERS["argvalues"], ids=ANSWERS["ids"])
async def test_run_after_a_server_restart_uses_the_tool_on_the_same_worker(
    answer: int, tmp_path: Path, time_skipping_env, task_queue
):
    """Whole runs on one worker, as a user sees it: a run before the server restarts and one after both use the
    tool, each running it once; no worker restart is needed."""
    port, counts = free_port(), tmp_path / "runs.txt"

    def agent(label: str) -> AgentSpec:
        return AgentSpec(
            name="ts",
            mcp_servers=[McpHttpServer(name="ts", url=f"http://127.0.0.1:{port}/mcp")],
            scripted=[
                ScriptedReply(tool_calls=[ScriptedToolCall(name="count", arguments={"label": label})]),
                ScriptedReply(text="done"),
            ],
        )

    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        with ts_mcp_server(port, answer, counts):
            before = await stalwart.run(agent("before"), "go")
        with ts_mcp_server(port, answer, counts):
            after = await stalwart.run(agent("after"), "go")
    for result in (before, after):
        steps = [step for step in result.steps if step.role == "tool"]
        assert (result.stop_reason, [(s.error, s.result) for s in steps]) == ("done", [(None, "1")])
    assert (executions(counts, "before"), executions(counts, "after")) == (1, 1)
