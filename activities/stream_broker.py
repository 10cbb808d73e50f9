"""The worker's push channel: answer text goes from the model activity to subscribers as it is generated.

Heartbeats stay the durable record of a turn in flight (`activities/streaming.py`), but they reach a client
only when it next asks the server (every 100 ms) after the SDK's throttle lets them out (another 100 ms). So
the worker also hands each chunk to this broker, which sends it at once to whoever subscribed to the run over
a plain TCP connection: one JSON line per chunk, the chunk encoded with the worker's data converter (so with
its codec: encrypted when the worker's keys are set, as heartbeats are).

A worker says where its broker listens in its identity (`<identity> stream=<host>:<port>`), which clients
read from the task queue's pollers and from a pending activity's last worker; a worker without one (an older
release) is simply polled. The broker keeps nothing a reconnecting subscriber could not read from the run
itself: only the turns in flight, sent whole to each new subscriber, then their deltas. Fan-out is here: one
encoding per chunk, whatever the number of subscribers, and a client process opens one subscription per run.

Settings: `STALWART_STREAM_HOST` (default 127.0.0.1: a subscriber on another host needs an address it can
reach, e.g. the host's own), `STALWART_STREAM_PORT` (default: any free port), `STALWART_STREAM=off` to run
without a broker.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import contextvars
import json
import os
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.api.common.v1 import Payloads
from temporalio.converter import DataConverter
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from stalwart.contracts.stream import StreamChunk, apply_chunk

QUEUE_LIMIT = 10_000
"""Chunks waiting for one subscriber before it is dropped (it reconnects and is sent the turn whole)."""


@dataclass
class _Channel:
    """One run's turns in flight and its subscribers."""

    live: dict[int, StreamChunk] = field(default_factory=dict)
    """Each step's text so far (`at=0`), as of the chunks already sent: what a new subscriber is sent first."""
    pending: collections.deque[StreamChunk] = field(default_factory=collections.deque)
    """Chunks published and not yet sent, oldest first: a model that writes faster than they are encoded queues many."""
    subscribers: set[asyncio.Queue[bytes | None]] = field(default_factory=set)
    sender: asyncio.Task[None] | None = None


class StreamBroker:
    """Fans out the chunks the model activities of one worker publish, by run (workflow id)."""

    def __init__(self, host: str | None = None, port: int | None = None) -> None:
        self.host = host or os.environ.get("STALWART_STREAM_HOST") or "127.0.0.1"
        self.port = port if port is not None else int(os.environ.get("STALWART_STREAM_PORT") or 0)
        self.converter: DataConverter | None = None
        self.subscriptions = 0
        """Subscriptions open now, all runs together (one per client process and run)."""
        self._socket: socket.socket | None = None
        self._server: asyncio.Server | None = None
        self._channels: dict[str, _Channel] = {}
        self._users = 0

    @property
    def address(self) -> str:
        if self._socket is None:
            raise RuntimeError("the stream broker is not bound yet: call bind() first")
        host, port = self._socket.getsockname()[:2]
        return f"{host}:{port}"

    def bind(self) -> str:
        """Take the port now (a worker's identity names it before the worker runs); returns `host:port`."""
        if self._socket is None:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
            sock.setblocking(False)
            self._socket = sock
        return self.address

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Accept subscribers while the block runs (shared by the workers one plugin configures)."""
        self.bind()
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, sock=self._socket)
        self._users += 1
        try:
            yield
        finally:
            self._users -= 1
            if self._users == 0:
                await self.close()

    async def close(self) -> None:
        """Stop accepting, and end every subscription (subscribers fall back to reading the run)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for channel in self._channels.values():
            if channel.sender is not None:
                channel.sender.cancel()
            for queue in channel.subscribers:
                queue.put_nowait(None)
        self._channels.clear()
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)

    def publish(self, run_id: str, chunk: StreamChunk) -> None:
        """Send `chunk` to the run's subscribers, in order, as soon as it is encoded. Never blocks, never fails."""
        if self._server is None:
            return
        channel = self._channels.setdefault(run_id, _Channel())
        channel.pending.append(chunk)
        if channel.sender is None or channel.sender.done():
            channel.sender = asyncio.get_running_loop().create_task(self._send(run_id, channel))

    async def _send(self, run_id: str, channel: _Channel) -> None:
        while channel.pending:
            chunk = channel.pending.popleft()
            line = await self._encode(chunk)
            apply_chunk(channel.live, chunk)
            for queue in list(channel.subscribers):
                if queue.qsize() >= QUEUE_LIMIT:  # a subscriber that cannot keep up reconnects and catches up
                    channel.subscribers.discard(queue)
                    queue.put_nowait(None)
                else:
                    queue.put_nowait(line)
        self._forget_if_idle(run_id, channel)

    def _forget_if_idle(self, run_id: str, channel: _Channel) -> None:
        if (
            not channel.live
            and not channel.subscribers
            and not channel.pending
            and self._channels.get(run_id) is channel
        ):
            del self._channels[run_id]

    async def _encode(self, chunk: StreamChunk) -> bytes:
        converter = self.converter or DataConverter.default
        payloads = Payloads(payloads=await converter.encode([chunk]))
        return json.dumps({"p": base64.b64encode(payloads.SerializeToString()).decode()}).encode() + b"\n"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One subscription: `{"run": id}` in, the run's turns in flight, then each chunk as it comes."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        channel: _Channel | None = None
        run_id = ""
        try:
            request = json.loads(await reader.readline())
            run_id = str(request["run"])
            channel = self._channels.setdefault(run_id, _Channel())
            # Taken with the queue joined in one step: the queue holds exactly the chunks after this picture.
            now = list(channel.live.values())
            channel.subscribers.add(queue)
            self.subscriptions += 1
            writer.write(b'{"ok": true}\n')
            for chunk in now:
                writer.write(await self._encode(chunk))
            await writer.drain()
            closed = asyncio.ensure_future(reader.read())  # the subscriber leaving ends the subscription
            while True:
                got = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({got, closed}, return_when=asyncio.FIRST_COMPLETED)
                if got not in done:
                    got.cancel()
                    break
                line = got.result()
                if line is None:
                    break
                writer.write(line)
                await writer.drain()
            closed.cancel()
        except (OSError, ValueError, KeyError, TypeError, asyncio.IncompleteReadError):
            pass  # a subscriber that went away or spoke nonsense: nothing to keep
        finally:
            if channel is not None and queue in channel.subscribers:
                channel.subscribers.discard(queue)
                self.subscriptions -= 1
                self._forget_if_idle(run_id, channel)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


_CURRENT: contextvars.ContextVar[StreamBroker | None] = contextvars.ContextVar("stalwart_stream_broker", default=None)


def publisher() -> Callable[[StreamChunk], None] | None:
    """How the running activity pushes its chunks (None outside an activity, or on a worker without a broker)."""
    broker = _CURRENT.get()
    if broker is None:
        return None
    try:
        run_id = activity.info().workflow_id
    except RuntimeError:
        return None
    if run_id is None:
        return None
    return lambda chunk: broker.publish(run_id, chunk)


def current_attempt() -> int:
    try:
        return activity.info().attempt
    except RuntimeError:
        return 1


class StreamBrokerInterceptor(Interceptor):
    """Lets the activities of one worker find its broker."""

    def __init__(self, broker: StreamBroker) -> None:
        self.broker = broker

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BrokerInbound(next, self.broker)


class _BrokerInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, broker: StreamBroker) -> None:
        super().__init__(next)
        self.broker = broker

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        token = _CURRENT.set(self.broker)
        try:
            return await super().execute_activity(input)
        finally:
            _CURRENT.reset(token)


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether workers run a broker (`STALWART_STREAM=off` turns it off)."""
    value = (environ if environ is not None else os.environ).get("STALWART_STREAM", "on")
    return value.strip().lower() not in ("off", "0", "false", "no")
