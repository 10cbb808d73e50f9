"""How the worker reaches one MCP server: a subprocess over stdio, or streamable HTTP.

The transport's read stream is watched, so the connection knows the moment
its server is gone (a stdio server that exited) and the next call can start
a fresh one instead of failing.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2  # the client type `streamable_http_client` takes; a dependency of `mcp` itself
from mcp import StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client

from stalwart.activities import secrets
from stalwart.activities.mcp import rejections
from stalwart.activities.mcp.errors import McpConfigError
from stalwart.contracts.agent import ENV_REFERENCE, McpServerSpec, McpStdioServer

PYTHON_COMMANDS = ("python", "python3")
"""Commands that mean the worker's own interpreter, so a server written in Python finds the worker's `mcp`."""

HTTP_TIMEOUT_SECONDS = 30.0
HTTP_STREAM_READ_SECONDS = 300.0
_REFERENCE = ENV_REFERENCE


def expand(value: str, environ: Mapping[str, str], where: str) -> str:
    """Replace `${NAME}` with the worker's environment variable, so secrets stay out of the run's history.

    Only in a server's `headers` and `env`, and only a variable agent files may read (`activities/secrets.py`):
    never one of the worker's own settings nor a provider key, whatever the allowlist. The worker refuses here even
    when `stalwart check` was never run on the file."""

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        try:  # only variables agent files may read; their values are redacted wherever they would leave an activity
            secrets.read_env(name, where, environ)
        except secrets.EnvNotAllowed as err:
            raise McpConfigError(str(err)) from None
        if name not in environ:
            raise McpConfigError(
                f"{where} uses ${{{name}}}, which is not set in the worker's environment; "
                f"export {name} before starting the worker"
            )
        return environ[name]

    return _REFERENCE.sub(lookup, value)


def stdio_parameters(spec: McpStdioServer, environ: Mapping[str, str] | None = None) -> StdioServerParameters:
    environ = os.environ if environ is None else environ
    command = sys.executable if spec.command in PYTHON_COMMANDS else spec.command
    env = {key: expand(value, environ, f"MCP server {spec.name!r}: env {key}") for key, value in spec.env.items()}
    return StdioServerParameters(command=command, args=list(spec.args), env=env or None, cwd=spec.cwd)


@asynccontextmanager
async def open_transport(
    spec: McpServerSpec,
    ended: anyio.Event,
    environ: Mapping[str, str] | None = None,
    answers: list[str] | None = None,
) -> AsyncIterator[TransportStreams]:
    """Streams to and from the server; `ended` is set once the server can send nothing more.

    Over HTTP, each answer that is not a success is appended to `answers` (`HTTP 405 (text/html)`), so a
    failed handshake can say what the server answered: the MCP client reports only that it failed. An answer
    refusing a request's session is recorded for the task that sent the request (`rejections`)."""
    environ = os.environ if environ is None else environ
    if isinstance(spec, McpStdioServer):
        async with stdio_client(stdio_parameters(spec, environ)) as (read, write):
            yield _WatchedReadStream(read, ended), write
        return
    headers = {
        key: expand(value, environ, f"MCP server {spec.name!r}: header {key}") for key, value in spec.headers.items()
    }
    timeout = httpx2.Timeout(HTTP_TIMEOUT_SECONDS, read=HTTP_STREAM_READ_SECONDS)

    async def note(response: httpx2.Response) -> None:
        if answers is not None and response.status_code >= 400:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            answers.append(f"HTTP {response.status_code} ({kind}) to {response.request.method}")

    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=timeout, event_hooks={"response": [note, rejections.record]}
        ) as http,
        streamable_http_client(spec.url, http_client=http) as (read, write),
    ):
        yield _WatchedReadStream(read, ended), write


class _WatchedReadStream:
    """A read stream that sets `ended` when it runs dry; everything else passes through."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended.set()
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        # `last_context` and any other extra the dispatcher reads from the real stream.
        return getattr(self._inner, name)
