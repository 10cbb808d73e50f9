"""A TCP proxy a test can cut: one worker behind it loses the server (as in a server outage, or a network
partition) while the server and the other workers go on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from stalwart.workers.dev_server import free_port


class Partition:
    """Forwards `127.0.0.1:port` to `upstream` until `cut()`, which closes every connection and refuses new ones."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host or "127.0.0.1", int(port))
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def heal(self) -> None:
        """Forward again (or for the first time)."""
        if self._server is None:
            self._server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Refuse new connections and drop the open ones."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except asyncio.CancelledError:  # the test's loop is closing: the connection goes with it
            writer.transport.abort()
            up_writer.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # one side went away, or the partition cut it
        finally:
            self._writers.discard(writer)
            writer.transport.abort()


@asynccontextmanager
async def partition(upstream: str) -> AsyncIterator[Partition]:
    """A healed `Partition` to `upstream` for the block, cut when it ends."""
    proxy = Partition(upstream)
    await proxy.heal()
    try:
        yield proxy
    finally:
        with contextlib.suppress(Exception):
            await proxy.cut()
