"""One live session with one MCP server, owned by a task of its own.

The MCP client's task groups must be entered and left by the same task, but
the calls come from many activity tasks and the close from the worker's
shutdown. So a dedicated task opens the client, holds it until asked to
close, and closes it; every other task only sends requests through it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from importlib.metadata import PackageNotFoundError, version

import anyio
from mcp import Client, Implementation

from stalwart.activities.mcp.transport import open_transport
from stalwart.contracts.agent import McpServerSpec

logger = logging.getLogger(__name__)


def _client_info() -> Implementation:
    try:
        own_version = version("stalwart")
    except PackageNotFoundError:
        own_version = "0"
    return Implementation(name="stalwart", version=own_version)


CLOSE_SECONDS = 5.0
"""How long a closing session may take to end by itself (a stdio server to exit) before it is cancelled."""


class HandshakeTimeout(Exception):
    """The server did not finish the MCP handshake in time."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer to the MCP handshake within {seconds:g}s")
        self.seconds = seconds


class McpConnection:
    """A session with one server; `alive` turns False once the server can answer nothing more."""

    def __init__(self, spec: McpServerSpec) -> None:
        self.spec = spec
        self._ended = anyio.Event()
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self.failure: BaseException | None = None
        """What ended the session, if anything but a close did."""
        self.http_answers: list[str] = []
        """The HTTP errors the server answered with (`HTTP 405 (text/html) to POST`), newest last."""

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("open the connection first")
        return self._client

    @property
    def alive(self) -> bool:
        return (
            self._client is not None and not self._ended.is_set() and self._owner is not None and not self._owner.done()
        )

    async def open(self) -> None:
        """Start the server (or reach it) and finish the MCP handshake within `spec.handshake_seconds`.

        Raises what stopped it, or `HandshakeTimeout`. However `open` ends without a session (a deadline,
        an error, the caller cancelled as the worker shuts down), the half-open session is torn down at
        once: a server that never answers does not hold the caller or the worker's shutdown.
        """
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        # A fresh context: the session outlives the activity that happened to open it.
        self._owner = asyncio.create_task(
            self._own(ready), name=f"mcp server {self.spec.name}", context=contextvars.Context()
        )
        try:
            async with asyncio.timeout(self.spec.handshake_seconds):
                self._client = await asyncio.shield(ready)
        except TimeoutError:
            await self._abandon()
            raise HandshakeTimeout(self.spec.handshake_seconds) from None
        except BaseException:
            await self._abandon()
            raise

    async def close(self) -> None:
        """End the session; one still in its handshake, or slow to end, is cancelled after `CLOSE_SECONDS`."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            if self._client is None:
                owner.cancel()
            _, pending = await asyncio.wait({owner}, timeout=CLOSE_SECONDS)
            if pending:
                owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        self._client = None

    async def _abandon(self) -> None:
        self._closing.set()
        if self._owner is not None:
            self._owner.cancel()
            await asyncio.gather(self._owner, return_exceptions=True)

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        try:
            transport = open_transport(self.spec, self._ended, answers=self.http_answers)
            async with Client(transport, cache=None, client_info=_client_info()) as client:
                ready.set_result(client)
                await self._closing.wait()
        except BaseException as err:
            self.failure = err
            if not ready.done():
                ready.cancel() if isinstance(err, asyncio.CancelledError) else ready.set_exception(err)
            elif not isinstance(err, asyncio.CancelledError):
                cause = err
                while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # the task groups' wrappers
                    cause = cause.exceptions[0]
                logger.info("MCP server %r: session ended with %s: %s", self.spec.name, type(cause).__name__, cause)
            if isinstance(err, asyncio.CancelledError):
                raise
