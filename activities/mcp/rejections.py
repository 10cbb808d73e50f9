"""Whether an MCP server over HTTP refused a request for its session, read from the HTTP answer itself.

A server that restarted has forgotten its sessions: it answers a request naming one with 400 or 404 before it runs
anything, so a new session may ask again safely. The MCP client turns that answer into a JSON-RPC error whose code
and text depend on the server, not on what happened: the TypeScript SDK's servers send their error with no content
type, so the client never reads it and says "Server returned an error response" (a 400) or "Session terminated"
(a 404). The status is what tells, so it is taken from the HTTP exchange: an httpx response hook.

The hook runs in the task that POSTs the request, and the MCP client starts that task in a copy of the context of
the task that sent the request (its streams carry the sender's contextvars). So a caller opens `watching()` around
its request, and the hook finds that caller's `Exchange` and no other's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import httpx2

SESSION_HEADER = "mcp-session-id"
SESSION_GONE = (400, 404)
"""What a server answers a session it does not know: 404 from the Python SDK and the TypeScript transport, 400
("Server not initialized", "No valid session ID provided") from TypeScript servers that made a new transport."""


@dataclass
class Exchange:
    """What the server answered the requests one caller sent through a session."""

    rejected_session: str | None = None
    """The session id a request carried when the server answered it 400 or 404; None if none was refused."""
    status: int | None = None
    """That answer's HTTP status."""


_current: ContextVar[Exchange | None] = ContextVar("stalwart_mcp_exchange", default=None)


@contextmanager
def watching() -> Iterator[Exchange]:
    """An `Exchange` that records the answers to the requests sent from inside the block."""
    exchange = Exchange()
    token = _current.set(exchange)
    try:
        yield exchange
    finally:
        _current.reset(token)


async def record(response: httpx2.Response) -> None:
    """The httpx response hook: a 400 or 404 to a request that named a session is a refused session."""
    exchange = _current.get()
    if exchange is None or response.status_code not in SESSION_GONE:
        return
    session = response.request.headers.get(SESSION_HEADER)
    if session:
        exchange.rejected_session = session
        exchange.status = response.status_code
