"""The worker's MCP connections: one per server, reused by every call, restarted when its server died.

A pool belongs to one worker (`ToolActivities`); the worker closes it at
shutdown, which stops every stdio server it started.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult, Tool

from stalwart.activities.mcp import rejections
from stalwart.activities.mcp.connection import HandshakeTimeout, McpConnection
from stalwart.activities.mcp.errors import (
    McpConfigError,
    McpHandshakeTimeout,
    McpServerExited,
    McpToolError,
    McpUnavailable,
)
from stalwart.contracts.agent import McpServerSpec, McpStdioServer

logger = logging.getLogger(__name__)

MAX_LIST_PAGES = 100
_NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout)
"""Failures of an HTTP session that prove its last request was never delivered."""


class McpPool:
    """Connections keyed by how a server is reached, so agents that name one server differently share it.

    A session its server refused (it restarted and forgot it) is retired: no new request is sent through it, and
    it is closed once the last request still waiting on it has its answer. Closing it at once would cut those
    requests off, and a request cut off cannot tell whether the server ran it; answered, each is refused too and
    asked again on the new session.
    """

    def __init__(self) -> None:
        self._connections: dict[str, McpConnection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[McpConnection, int] = {}
        """How many requests wait on each connection's answers."""
        self._retired: set[McpConnection] = set()

    @staticmethod
    def key(spec: McpServerSpec) -> str:
        return spec.model_dump_json(exclude={"name", "tools", "handshake_seconds"})

    async def connection(self, spec: McpServerSpec) -> McpConnection:
        """The live connection to `spec`, started (again) when there is none or its server has gone."""
        key = self.key(spec)
        async with self._locks.setdefault(key, asyncio.Lock()):
            current = self._connections.get(key)
            if current is not None and current.alive:
                return current
            if current is not None:
                logger.info("MCP server %r is gone; starting it again", spec.name)
                del self._connections[key]
                await current.close()
            connection = McpConnection(spec)
            failure: BaseException | None = None
            try:
                await connection.open()
            except asyncio.CancelledError:
                raise
            except BaseException as err:
                failure = err
            if failure is not None:
                # Raised outside the handler, from the innermost cause: the MCP client wraps every failure in
                # task-group ExceptionGroups, whose message ("unhandled errors in a TaskGroup") explains nothing
                # and whose members would chain back to themselves (a cycle the failure converter recurses on).
                # The message carries the cause: a run's error is the innermost message of the chain, so none follows.
                cause = _leaf(failure) or failure
                logger.debug("MCP server %r: connecting failed", spec.name, exc_info=cause)
                raise _connect_error(spec, cause, connection.http_answers) from None
            self._connections[key] = connection
            return connection

    async def list_tools(self, spec: McpServerSpec) -> list[Tool]:
        try:
            return await self._list_tools(spec)
        except _SessionRejected as rejected:
            # The server forgot our session (it restarted): a new session is all it takes, and listing is safe
            # to repeat. A second rejection is the server's answer.
            _reconnecting(spec, rejected)
            try:
                return await self._list_tools(spec)
            except _SessionRejected as again:
                raise McpUnavailable(
                    f"MCP server {spec.name!r} ({_where(spec)}) rejected a new session too ({again})"
                ) from again.error

    async def _list_tools(self, spec: McpServerSpec) -> list[Tool]:
        connection = await self.connection(spec)
        tools: list[Tool] = []
        cursor: str | None = None
        async with self._waiting_on(connection) as exchange:
            try:
                for _ in range(MAX_LIST_PAGES):
                    page = await connection.client.list_tools(cursor=cursor, cache_mode="bypass")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        return tools
            except MCPError as err:
                self._raise_if_rejected(spec, connection, exchange, err)
                if err.code == CONNECTION_CLOSED:
                    await self._discard(spec, connection)
                    raise McpUnavailable(f"MCP server {spec.name!r} went away while listing its tools") from err
                raise McpConfigError(
                    f"MCP server {spec.name!r} ({_where(spec)}) cannot list its tools: {err}. "
                    f"Is it an MCP server with tools?"
                ) from err
        raise McpUnavailable(f"MCP server {spec.name!r} listed more than {MAX_LIST_PAGES} pages of tools")

    async def call_tool(self, spec: McpServerSpec, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call a tool; an error the server reports is raised as `McpToolError` for the model to read.

        A server that refuses the session (it restarted and forgot it) refuses before it runs anything, so the
        call is made once more, on a new session. A call that failed in any other way may have run: it is not."""
        try:
            return await self._call_tool(spec, name, arguments)
        except _SessionRejected as rejected:
            _reconnecting(spec, rejected)
            try:
                return await self._call_tool(spec, name, arguments)
            except _SessionRejected as again:
                raise McpUnavailable(
                    f"MCP server {spec.name!r} ({_where(spec)}) rejected a new session too ({again})"
                ) from again.error

    async def _call_tool(self, spec: McpServerSpec, name: str, arguments: dict[str, Any]) -> CallToolResult:
        connection = await self.connection(spec)
        async with self._waiting_on(connection) as exchange:
            try:
                return await connection.client.call_tool(name, arguments)
            except MCPError as err:
                self._raise_if_rejected(spec, connection, exchange, err)
                if err.code == CONNECTION_CLOSED:
                    await self._discard(spec, connection)
                    if isinstance(_leaf(connection.failure), _NOT_SENT):
                        # The request never reached the server, so trying again (on a new session) is safe.
                        raise McpUnavailable(
                            f"MCP server {spec.name!r}: lost the connection ({_leaf(connection.failure)})"
                        ) from err
                    raise McpServerExited(
                        f"MCP server {spec.name!r} closed the connection while running {name!r} (did it crash?)"
                    ) from err
                raise McpToolError(str(err)) from err
            except (httpx2.TransportError, OSError) as err:
                self._raise_if_rejected(spec, connection, exchange, err)
                await self._discard(spec, connection)
                if isinstance(err, _NOT_SENT):
                    raise McpUnavailable(f"MCP server {spec.name!r}: {type(err).__name__}: {err}") from err
                # The request may have reached the server (a read timeout, a connection dropped mid-call):
                # Temporal must not retry it blindly, or a side-effecting tool could run twice.
                raise McpServerExited(
                    f"MCP server {spec.name!r}: lost the connection while running {name!r} "
                    f"({type(err).__name__}: {err})"
                ) from err

    def alive(self, spec: McpServerSpec) -> bool:
        """Whether a live connection to `spec` is open now (a dead one is replaced on its next use)."""
        connection = self._connections.get(self.key(spec))
        return connection is not None and connection.alive

    async def aclose(self) -> None:
        """Close every connection (stopping stdio servers); the pool can be used again afterwards."""
        connections = [*self._connections.values(), *self._retired]
        self._connections, self._retired = {}, set()
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    async def _discard(self, spec: McpServerSpec, connection: McpConnection) -> None:
        key = self.key(spec)
        if self._connections.get(key) is connection:
            del self._connections[key]
        await connection.close()

    @asynccontextmanager
    async def _waiting_on(self, connection: McpConnection) -> AsyncIterator[rejections.Exchange]:
        """Around requests sent through `connection`: what its server answered them, and a retired connection
        closed once no request waits on it any more."""
        self._waiting[connection] = self._waiting.get(connection, 0) + 1
        try:
            with rejections.watching() as exchange:
                yield exchange
        finally:
            self._waiting[connection] -= 1
            if not self._waiting[connection]:
                del self._waiting[connection]
                if connection in self._retired:
                    await connection.close()
                    self._retired.discard(connection)  # only now: one whose close was cut short is closed by aclose

    def _raise_if_rejected(
        self, spec: McpServerSpec, connection: McpConnection, exchange: rejections.Exchange, err: Exception
    ) -> None:
        """Raise `_SessionRejected` if the server refused the session of the request that failed with `err`."""
        if exchange.rejected_session is None:
            return
        key = self.key(spec)
        if self._connections.get(key) is connection:
            del self._connections[key]
        self._retired.add(connection)
        raise _SessionRejected(err, exchange) from err


def _reconnecting(spec: McpServerSpec, rejected: _SessionRejected) -> None:
    logger.warning(
        "MCP server %r (%s) rejected its session (%s): it has probably restarted; reconnecting with a new session",
        spec.name,
        _where(spec),
        rejected,
    )


def _leaf(err: BaseException | None) -> BaseException | None:
    """The first real error inside the task-group wrappers the MCP client raises."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


class _SessionRejected(Exception):
    """The server refused a request of a session it no longer knows (HTTP 400 or 404): it ran nothing, and a new
    session may succeed."""

    def __init__(self, error: Exception, exchange: rejections.Exchange) -> None:
        super().__init__(f"HTTP {exchange.status} to session {exchange.rejected_session}: {error}")
        self.error = error


def _where(spec: McpServerSpec) -> str:
    if isinstance(spec, McpStdioServer):
        return f"`{shlex.join([spec.command, *spec.args])}`"
    return spec.url


def _connect_error(spec: McpServerSpec, err: BaseException, answers: list[str] | None = None) -> Exception:
    if isinstance(err, McpConfigError):
        return err
    if isinstance(err, HandshakeTimeout):
        if isinstance(spec, McpStdioServer):
            where = f" in {spec.cwd}" if spec.cwd else ""
            return McpHandshakeTimeout(
                f"MCP server {spec.name!r}: `{shlex.join([spec.command, *spec.args])}`{where} started but did not "
                f"answer the MCP handshake within {err.seconds:g}s. Run that command yourself: an MCP server over "
                f"stdio waits for JSON-RPC on stdin. If it is just slow to start, raise `handshake_seconds` of that "
                f"server in the agent file."
            )
        return McpHandshakeTimeout(
            f"MCP server {spec.name!r}: {spec.url} did not answer the MCP handshake within {err.seconds:g}s. "
            f"Check that it is an MCP endpoint and not overloaded, or raise `handshake_seconds` of that server."
        )
    if isinstance(spec, McpStdioServer):
        command = shlex.join([spec.command, *spec.args])
        where = f" in {spec.cwd}" if spec.cwd else ""
        if isinstance(err, OSError):
            return McpConfigError(
                f"MCP server {spec.name!r}: cannot start `{command}`{where}: {err.strerror or err}. "
                f"Fix `command` in the agent file or install it on the worker."
            )
        return McpConfigError(
            f"MCP server {spec.name!r}: `{command}`{where} stopped before the MCP handshake finished "
            f"({type(err).__name__}: {err}). Run that command yourself to see its error."
        )
    if isinstance(err, httpx2.InvalidURL):
        return McpConfigError(
            f"MCP server {spec.name!r}: no request can be sent to {spec.url}: it is not a URL an HTTP client can "
            f"open ({err}). Fix `url` in the agent file."
        )
    if isinstance(err, httpx2.HTTPStatusError) and err.response.status_code in (401, 403, 404):
        return McpConfigError(
            f"MCP server {spec.name!r}: {spec.url} answered HTTP {err.response.status_code}. "
            f"Check `url` and `headers` in the agent file."
        )
    if isinstance(err, MCPError):
        answered = f"answered {answers[-1]}: " if answers else ""
        status = re.match(r"HTTP (\d+)", answers[-1]) if answers else None
        if status and 400 <= int(status.group(1)) < 500 and int(status.group(1)) not in (408, 429):
            # The server is up and says this request is wrong for it: trying again will not change that.
            return McpConfigError(
                f"MCP server {spec.name!r}: {spec.url} refused the MCP handshake ({answered}{err}). "
                "Check that `url` is the server's MCP endpoint (often ending in /mcp) and `headers` in the agent file."
            )
        return McpUnavailable(
            f"MCP server {spec.name!r}: {spec.url} refused the MCP handshake ({answered}{err}). "
            "Check that `url` is the server's MCP endpoint (often ending in /mcp) and that the server is running."
        )
    return McpUnavailable(
        f"MCP server {spec.name!r}: cannot reach {spec.url} ({type(err).__name__}: {err}). "
        "Check that the server is running."
    )
