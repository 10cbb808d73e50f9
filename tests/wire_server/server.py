"""A local HTTP server that speaks OpenAI Chat Completions, OpenAI Responses and Anthropic Messages.

Each test registers a script (a list of steps) and points a real SDK client
at the script's base URL; request N to that script gets step N, in the wire
format of the endpoint it called. Requests are recorded for assertions.
Plain asyncio streams keep the faults exact: a stream can stall after its
headers or be cut in the middle of a chunked body.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import formats
from .script import Broken, Cut, Fail, Freeze, Garbage, Reply, Stall, Step


@dataclass(frozen=True)
class WireFormat:
    stream: Callable[[Reply, str], list[bytes]]
    error: Callable[[str, str], dict[str, Any]]
    error_event: Callable[[str, str], bytes]


_ROUTES: dict[str, WireFormat] = {
    "/v1/chat/completions": WireFormat(formats.chat_stream, formats.chat_error, formats.chat_error_event),
    "/v1/responses": WireFormat(formats.responses_stream, formats.chat_error, formats.responses_error_event),
    "/v1/messages": WireFormat(formats.anthropic_stream, formats.anthropic_error, formats.anthropic_error_event),
}
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class Recorded:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    first_event_at: float | None = None
    """When the first event of a streamed reply was written (`time.monotonic()`), for latency measurements."""


@dataclass
class Script:
    """The steps one test scripted, and the requests that consumed them."""

    root: str
    steps: list[Step]
    requests: list[Recorded] = field(default_factory=list)

    @property
    def openai_base_url(self) -> str:
        return f"{self.root}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.root


class WireServer:
    def __init__(self) -> None:
        self._scripts: dict[str, Script] = {}
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    def script(self, *steps: Step) -> Script:
        script_id = uuid.uuid4().hex[:10]
        script = Script(root=f"http://127.0.0.1:{self.port}/s/{script_id}", steps=list(steps))
        self._scripts[script_id] = script
        return script

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, target, _ = (await reader.readline()).decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
        _, _, script_id, path = target.split("/", 3)
        script = self._scripts.get(script_id)
        route = _ROUTES.get("/" + path.split("?")[0])
        if method != "POST" or script is None or route is None:
            await _json(writer, 404, {"error": {"message": f"no route {method} {target}", "type": "not_found"}})
            return
        error = route.error
        index = len(script.requests)
        recorded = Recorded("/" + path, headers, body, time.monotonic())
        script.requests.append(recorded)
        if index >= len(script.steps):
            await _json(writer, 400, error("invalid_request_error", f"wire server: the script has no step {index + 1}"))
            return
        step = script.steps[index]
        model = body.get("model", "")
        if isinstance(step, Fail):
            extra = {"retry-after": f"{step.retry_after:g}"} if step.retry_after is not None else {}
            await _json(writer, step.status, error(step.kind, step.message), extra)
        elif isinstance(step, Garbage):
            await _raw(writer, step.status, step.body, step.content_type)
        elif isinstance(step, Stall) and step.then is None:
            await _start_sse(writer)
            await _silence(reader, step.seconds)
        else:
            reply = step if isinstance(step, Reply) else step.then if isinstance(step, Stall) else step.reply
            assert reply is not None
            events = route.stream(reply, model)
            if isinstance(step, Broken):
                events = [*events[: step.events], route.error_event(step.kind, step.message)]
            await _start_sse(writer)
            if isinstance(step, Stall):
                await asyncio.sleep(step.seconds)
            for n, event in enumerate(events):
                if isinstance(step, Cut) and n == step.events:
                    writer.transport.abort()
                    return
                if isinstance(step, Freeze) and n == step.events:
                    await _silence(reader, step.seconds)
                    return
                if recorded.first_event_at is None:
                    recorded.first_event_at = time.monotonic()
                writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                await writer.drain()
                if reply.pause:
                    await asyncio.sleep(reply.pause)
            writer.write(b"0\r\n\r\n")
            await writer.drain()


async def _json(
    writer: asyncio.StreamWriter, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
) -> None:
    data = json.dumps(payload).encode()
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        "content-type: application/json",
        f"content-length: {len(data)}",
        "connection: close",
    ]
    head += [f"{k}: {v}" for k, v in (extra or {}).items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    await writer.drain()


async def _raw(writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str) -> None:
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        f"content-type: {content_type}",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()


async def _silence(reader: asyncio.StreamReader, seconds: float) -> None:
    """Send nothing for `seconds`, or until the client hangs up."""
    try:
        await asyncio.wait_for(reader.read(1), seconds)
    except TimeoutError:
        pass


async def _start_sse(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    await writer.drain()
