"""A run's answer text as the workers push it: the fast path of `client/stream.py` and `client/serve/feed.py`.

Workers name their stream broker in their identity (`activities/stream_broker.py`). A `PushSource` subscribes
to the brokers of the workers polling the run's task queue before any text exists, and to the broker of the
worker running a model call it meets later (one started since, or on another queue), so a chunk reaches it
one TCP hop after it reaches the worker. What it holds is what the heartbeats hold, sooner: each model turn in
flight as a `StreamProgress`, of the newest attempt; readers turn it into events exactly as they turn
heartbeats into events, so offsets, retractions and resumption do not depend on which path the text took.

It holds nothing durable: a broker that goes away (its worker stopped) takes its turns with it, and readers
go back to the heartbeats and the step log until the next attempt's worker is found.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Iterable

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionDescription
from temporalio.service import RPCError

from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.stream import StreamChunk, StreamProgress, apply_chunk, broker_address

CONNECT_SECONDS = 2.0
"""How long to wait for a broker to accept: one that does not (a remote worker's loopback, a firewall) is polled."""


class PushSource:
    """The turns in flight of one run, as pushed by the workers' brokers; one subscription per broker."""

    def __init__(self, temporal: Client, run_id: str) -> None:
        self.temporal = temporal
        self.run_id = run_id
        self.changed = asyncio.Event()
        """Set when pushed text changed or a turn ended; the reader clears it."""
        self.turn_ended = asyncio.Event()
        """Set when a turn ended (or a broker went away with turns in flight): time to read the run."""
        self.chunks = 0
        """Chunks received, all brokers together."""
        self._turns: dict[str, dict[int, StreamChunk]] = {}
        self._pushed: dict[int, int] = {}
        """The newest attempt of each step any text was pushed for, kept after the turn ends."""
        self._connections: dict[str, asyncio.Task[None]] = {}
        self._refused: set[str] = set()
        self._closed = False

    @property
    def connected(self) -> bool:
        """Whether any broker is subscribed to now (if none, the text comes by polling)."""
        return bool(self._turns)

    def take_ended(self) -> bool:
        """Whether a turn ended since last asked: its record is in the step log, or soon will be."""
        ended = self.turn_ended.is_set()
        self.turn_ended.clear()
        return ended

    def live(self) -> dict[int, tuple[int, StreamProgress]]:
        """Each model step's text so far, with the attempt that wrote it (the newest attempt any broker has)."""
        out: dict[int, tuple[int, StreamProgress]] = {}
        for turns in self._turns.values():
            for step, chunk in turns.items():
                if step not in out or out[step][0] < chunk.attempt:
                    out[step] = (chunk.attempt, StreamProgress(step=step, text=chunk.text, retracted=chunk.retracted))
        return out

    def merge(self, beats: dict[int, tuple[int, StreamProgress]]) -> dict[int, StreamProgress]:
        """Each turn in flight's text, given the heartbeats read (by step: the pending attempt and its details).

        Pushed text wins over heartbeats of the same attempt or an older one: it is the same text, further on,
        and the details the server shows a new attempt are its predecessor's until the new one beats.
        """
        newest = {step: beat for step, beat in beats.items() if beat[0] > self._pushed.get(step, 0)}
        for step, (attempt, progress) in self.live().items():
            if step not in newest or newest[step][0] <= attempt:
                newest[step] = (attempt, progress)
        return {step: progress for step, (_, progress) in newest.items()}

    async def discover(self, task_queue: str) -> None:
        """Subscribe to the brokers of the workers polling `task_queue` for activities."""
        try:
            described = await self.temporal.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=self.temporal.namespace,
                    task_queue=TaskQueue(name=task_queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
                )
            )
        except RPCError:
            return
        await self.follow(poller.identity for poller in described.pollers)

    async def follow_description(self, description: WorkflowExecutionDescription) -> None:
        """Subscribe to the broker of each worker running a model call of the run, if not subscribed yet."""
        await self.follow(
            pending.last_worker_identity
            for pending in description.raw_description.pending_activities
            if pending.activity_type.name == MODEL_ACTIVITY
        )

    async def follow(self, identities: Iterable[str]) -> None:
        """Subscribe to the brokers these worker identities name; each is subscribed to once while it lasts."""
        waits = []
        for identity in identities:
            address = broker_address(identity)
            if address is None or address in self._connections or address in self._refused or self._closed:
                continue
            accepted: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self._connections[address] = asyncio.create_task(self._subscribe(address, accepted))
            waits.append(accepted)
        for accepted in waits:  # subscribed before returning: no chunk from here on is missed
            with contextlib.suppress(Exception):
                await accepted

    async def aclose(self) -> None:
        self._closed = True
        tasks = list(self._connections.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _subscribe(self, address: str, accepted: asyncio.Future[bool]) -> None:
        host, _, port = address.rpartition(":")
        writer = None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), int(port)), CONNECT_SECONDS
            )
            writer.write(json.dumps({"run": self.run_id}).encode() + b"\n")
            await writer.drain()
            if not json.loads(await asyncio.wait_for(reader.readline(), CONNECT_SECONDS)).get("ok"):
                raise ConnectionError(f"the stream broker at {address} refused run {self.run_id}")
            turns = self._turns[address] = {}
            accepted.set_result(True)
            converter = self.temporal.data_converter
            while line := await reader.readline():
                raw = Payloads()
                raw.ParseFromString(base64.b64decode(json.loads(line)["p"]))
                [chunk] = await converter.decode(list(raw.payloads), [StreamChunk])
                self.chunks += 1
                apply_chunk(turns, chunk)
                self._pushed[chunk.step] = max(chunk.attempt, self._pushed.get(chunk.step, 0))
                if chunk.ended:
                    self.turn_ended.set()
                self.changed.set()
        except Exception:
            # Unreachable, or sending what this process cannot read (a codec without the worker's keys): not tried
            # again, as trying would fail the same way; the text comes by polling. A worker that stops closes the
            # connection instead, and one that starts again listens on another port.
            self._refused.add(address)
        finally:
            if not accepted.done():
                accepted.set_result(False)
            if self._turns.pop(address, None):
                self.turn_ended.set()  # its turns are gone: read the run now
            self._connections.pop(address, None)
            self.changed.set()
            if writer is not None:
                writer.close()
