"""What is refused before a route runs: a foreign origin, a missing or wrong token, a body over the limit.

Each refusal is the API's JSON error, `{"error": {"code": ..., "message": ...}}`, so an app reads every refusal
the same way. Pure ASGI middleware: a Server-Sent Events stream passes through untouched.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DRAIN_BYTES = 64 * 1024 * 1024
"""An oversized body up to this size is read (and dropped) before the 413 is sent, so a client that sends its
whole body before reading the answer reads the refusal instead of a broken connection; past it, the connection
is closed."""


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


async def send_error(
    send: Send, status: int, code: str, message: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = error_body(code, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class OriginGuard:
    """A browser page of an origin not allowed gets a 403 (preflights included); the page this server serves and
    clients that send no Origin (curl, apps on a server) pass. Outside the CORS middleware, which answers the rest."""

    def __init__(self, app: ASGIApp, origins: Sequence[str]) -> None:
        self.app = app
        self.origins = set(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            origin = _header(scope, b"origin")
            if origin is not None and origin not in self.origins and not _same_origin(origin, scope):
                await send_error(
                    send,
                    403,
                    "origin_not_allowed",
                    f"origin {origin} may not call this server: add it with --origin or STALWART_SERVE_ORIGINS",
                )
                return
        await self.app(scope, receive, send)


def _same_origin(origin: str, scope: Scope) -> bool:
    """Whether `origin` is this server's own (the page at `/` calling the API), as the request's Host names it."""
    host = _header(scope, b"host")
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return host is not None and parts.scheme == scope.get("scheme", "http") and parts.netloc == host


def _loopback_host(host: str | None) -> bool:
    """Whether a request's Host header names this machine's loopback (`localhost`, `127.x.x.x`, `[::1]`), port
    or not. No Host at all (an HTTP/1.0 client on this machine) is taken as the loopback the server listens on."""
    if host is None:
        return True
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name
    else:
        name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
    if name in ("localhost", "::1") or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class _BodyTooLarge(Exception):
    pass


class Guard:
    """The bearer token on `/api` (when the server has one), and the request body's size limit."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.token is None and not _loopback_host(_header(scope, b"host")):
            # Without a token only this machine may call. A web page that rebinds its own name to 127.0.0.1 reaches
            # the port as its own origin (so the origin check lets it by), but its requests still name its host.
            await send_error(
                send,
                403,
                "host_not_allowed",
                "this server has no token, so it answers only requests to localhost, 127.0.0.1 or [::1]: set "
                "STALWART_SERVE_TOKEN to serve it under another name",
            )
            return
        path: str = scope.get("path", "")
        if (
            self.token is not None
            and path.startswith("/api")
            and path != "/api/openapi.json"
            and scope.get("method") != "OPTIONS"
            and not self._authorized(scope)
        ):
            await send_error(
                send,
                401,
                "unauthorized",
                "missing or wrong bearer token: send `Authorization: Bearer <token>` (the server's "
                "STALWART_SERVE_TOKEN)",
                headers=[(b"www-authenticate", b"Bearer")],
            )
            return
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            closing = int(declared) > DRAIN_BYTES
            if not closing:
                await _drain(receive, 0)
            await send_error(
                send,
                413,
                "body_too_large",
                f"the request body has {int(declared):,} bytes, over this server's limit of "
                f"{self.max_body_bytes:,} (--max-body-bytes)",
                headers=[(b"connection", b"close")] if closing else [],
            )
            return
        started = False
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLarge()
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except _BodyTooLarge:
            if started:
                raise
            drained = await _drain(receive, received)
            await send_error(
                send,
                413,
                "body_too_large",
                f"the request body is over this server's limit of {self.max_body_bytes:,} bytes (--max-body-bytes)",
                headers=[] if drained else [(b"connection", b"close")],
            )

    def _authorized(self, scope: Scope) -> bool:
        assert self.token is not None
        # The scheme is case-insensitive (RFC 7235), as the codec server reads it.
        scheme, _, given = (_header(scope, b"authorization") or "").strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())


async def _drain(receive: Receive, received: int) -> bool:
    """Read the rest of a refused body, up to `DRAIN_BYTES` in all; whether it was read to its end."""
    more: Any = True
    while more:
        if received > DRAIN_BYTES:
            return False
        message = await receive()
        if message["type"] != "http.request":
            return False
        received += len(message.get("body", b""))
        more = message.get("more_body", False)
    return True
