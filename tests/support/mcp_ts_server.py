"""An MCP server over streamable HTTP that answers a session it does not know as the TypeScript SDK's servers do.

Run as a process of its own (`python mcp_ts_server.py PORT ANSWER COUNT_FILE`, or `ts_mcp_server(...)` from a
test), so a test restarts it for real: the process is killed and a new one serves the same port, knowing none of
the sessions the old one opened. A request naming such a session is answered as the Node transport of the
TypeScript SDK answers it, with no content type and a JSON-RPC error whose id is null:

- ANSWER `400`: `400 {"code": -32000, "message": "Bad Request: Server not initialized"}`, what a server that makes
  a new transport for an unknown session id answers (the transport was never initialised);
- ANSWER `404`: `404 {"code": -32001, "message": "Session not found"}`, what a transport answers to a session id
  other than its own.

Like those servers it speaks the session-based protocol of 2025 only (a `server/discover` probe is "method not
found", so the client falls back to `initialize` and gets a session id), and it holds no standing GET stream (405),
so the client learns of a restart from the answer to its next request alone.

Every run of a tool appends its `label` to COUNT_FILE, so a test counts how often the server really ran it,
across restarts; every session it opens appends `initialize`. `record_then_500` runs (and is counted), then its
answer is replaced by a 500; `record_then_exit` runs, then the process dies with the call's connection open.

With `forgetful` as a fourth argument the server knows no session at all, not even one it has just opened, as
behind a load balancer that spreads one session's requests over servers that do not share their sessions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STALE_SESSION_ANSWERS = {
    400: {"code": -32000, "message": "Bad Request: Server not initialized"},
    404: {"code": -32001, "message": "Session not found"},
}


def build_app(answer: int, count_file: Path, remembers: bool = True) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("ts-like")

    def record(label: str) -> int:
        with count_file.open("a") as counts:
            counts.write(label + "\n")
        return executions(count_file, label)

    @server.tool()
    def count(label: str) -> int:
        """Record one run under `label`; answers how many runs it has recorded."""
        return record(label)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def pid() -> int:
        """The server's process id, to tell one server process from the next."""
        return os.getpid()

    @server.tool()
    def record_then_500(label: str) -> int:
        """Record one run; the server then answers the call with HTTP 500."""
        return record(label)

    @server.tool()
    def record_then_exit(label: str) -> str:
        """Record one run, then kill the server before it answers."""
        record(label)
        os._exit(3)

    return ts_like(server.streamable_http_app(), answer, lambda: record("initialize"), remembers)


def ts_like(app: Any, answer: int, opening: Callable[[], object], remembers: bool) -> Any:
    """`app` answering unknown sessions as TypeScript servers do, without GET streams or `server/discover`;
    `opening` is called for each `initialize`, and an opened session is known from then on if `remembers`."""
    known: set[str] = set()
    error = json.dumps({"jsonrpc": "2.0", "error": STALE_SESSION_ANSWERS[answer], "id": None}).encode()

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["method"] == "GET":
            await _answer(send, 405, b"")
            return
        body = await _body(receive)
        session = dict(scope["headers"]).get(b"mcp-session-id")
        if session is not None and session.decode() not in known:
            # The Node transport writes these with `res.writeHead(status).end(json)`: no content type.
            await _answer(send, answer, error)
            return
        request = _json(body)
        if request.get("method") == "server/discover":
            refused = {
                "jsonrpc": "2.0",
                "id": request.get("id"),
                "error": {"code": -32601, "message": "Method not found"},
            }
            await _answer(send, 200, json.dumps(refused).encode(), b"application/json")
            return

        replayed = False

        async def replay() -> dict[str, Any]:  # the body once, then what the client sends next (a disconnect)
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        if (request.get("params") or {}).get("name") == "record_then_500":
            await app(scope, replay, _swallowed)  # the tool runs to its end; its answer is dropped
            await _answer(send, 500, b"Internal Server Error", b"text/plain")
            return

        if request.get("method") == "initialize":
            opening()

        async def noting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and remembers:
                issued = dict(message.get("headers", [])).get(b"mcp-session-id")
                if issued is not None:
                    known.add(issued.decode())
            await send(message)

        await app(scope, replay, noting)

    return wrapped


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _json(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


async def _answer(send: Any, status: int, body: bytes, content_type: bytes | None = None) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _swallowed(message: dict[str, Any]) -> None:
    pass


def executions(count_file: Path, label: str) -> int:
    """How many times the server ran a tool with `label`, in every process that served the tests so far."""
    if not count_file.exists():
        return 0
    return count_file.read_text().splitlines().count(label)


@contextmanager
def ts_mcp_server(
    port: int, answer: int, count_file: Path, remembers: bool = True
) -> Iterator[subprocess.Popen[bytes]]:
    """The server as a process on 127.0.0.1:`port` (endpoint /mcp) until the block ends, when it is killed."""
    from support.processes import listening_process  # here: run as a script, this module sees no `support`

    forgetful = [] if remembers else ["forgetful"]
    with listening_process([sys.executable, __file__, str(port), str(answer), str(count_file), *forgetful], port) as p:
        yield p


if __name__ == "__main__":
    import uvicorn

    port, answer, count_file = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    remembers = sys.argv[4:] != ["forgetful"]
    uvicorn.run(build_app(answer, count_file, remembers), host="127.0.0.1", port=port, log_level="warning")
