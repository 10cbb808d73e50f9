"""The demo MCP server over streamable HTTP as a process of its own, so a test can kill and restart it.

`python mcp_http_server.py PORT [STATUS]`: serve on 127.0.0.1:PORT at /mcp. With STATUS 400 a request naming a
session the server does not know is answered as the official TypeScript servers answer it (400 and a JSON-RPC
error "Bad Request: No valid session ID provided") instead of the Python server's 404.

It speaks only the session-based protocol of 2025 (it answers `server/discover` as a legacy server does, with
"method not found", so clients fall back to `initialize` and get a session id), as the official TypeScript servers
do. It offers no standing GET stream (405, as the spec allows), so a client holds no connection between requests
and learns of a restart only from the answer to its next request: the case a pool must handle.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn
from mcp_demo_server import build_server

TS_UNKNOWN_SESSION = {
    "jsonrpc": "2.0",
    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
    "id": None,
}


def restartable(app: Any, status: int) -> Any:
    """`app` without a GET stream and, with `status` 400, its 404 for an unknown session answered as 400."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await send({"type": "http.response.start", "status": 405, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            receive = await _legacy_only(receive, send)
            if receive is None:
                return
        if (
            status == 404
            or scope["type"] != "http"
            or not any(name == b"mcp-session-id" for name, _ in scope["headers"])
        ):
            await app(scope, receive, send)
            return
        replaced = False

        async def send_or_replace(message: dict[str, Any]) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 404:
                replaced = True
                body = json.dumps(TS_UNKNOWN_SESSION).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 400, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            elif not replaced:
                await send(message)

        await app(scope, receive, send_or_replace)

    return wrapped


async def _legacy_only(receive: Any, send: Any) -> Any:
    """Answer a `server/discover` POST with "method not found" (returns None); else a receive replaying the body."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    if isinstance(request, dict) and request.get("method") == "server/discover":
        error = {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32601, "message": "Method not found"}}
        data = json.dumps(error).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})
        return None
    replayed = False

    async def replay() -> dict[str, Any]:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


if __name__ == "__main__":
    port = int(sys.argv[1])
    status = int(sys.argv[2]) if len(sys.argv) > 2 else 404
    app = build_server().streamable_http_app()
    uvicorn.run(restartable(app, status), host="127.0.0.1", port=port, log_level="warning")
