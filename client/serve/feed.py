"""A run as a stream of `(offset, event)`: what `stalwart serve` sends to browsers and apps as Server-Sent Events.

The HTTP layer sees only `Feed.events(run_id, after)`. One watcher per run, whatever the number of
subscribers, follows the run, and each subscriber turns the latest snapshot into the events it has not yet
seen. The answer text is pushed: the watcher holds one subscription to the broker of the worker running the
model call (`client/push.py`), which sends each chunk as it reaches the worker, and a new snapshot goes to
every subscriber at once. The step log (the `state` query) is still read by polling, and so is the text of a
worker without the push channel (heartbeat details, `contracts/stream.py`); both paths give the same text, so
the offsets a client holds do not depend on which one it came by.

Offsets are read from the run itself, not from when a subscriber happened to look, so any subscriber (a new
one, one that reconnects) computes the same offset for the same point of the run:

    "<r>.<n>-<c>-<d>"   r: the run (8 hex digits of the CRC-32 of the Temporal run id that began the continue-as-new
                           chain): an id is reused once its run has closed, and an offset is a point of one run only;
                        n: records of the step log (the whole chain) delivered as `step` events;
                        c: characters (code points) of answer text delivered for record n, the model turn being
                           written;
                        d: a digest of those c characters (8 hex digits of their UTF-8's CRC-32), left out when c is 0.

A subscriber that comes back with the last offset it saw (`Last-Event-ID`) is sent what follows it and
nothing before: the rest of record n's text from character c, then the records after n. Text a retried attempt
withdraws is marked as withdrawn (`retract`), never sent twice. The digest is what tells the two apart on a
reconnection: the text of record n may have been written by an attempt that has since been retried, and the retry
may have written other words. If the first c characters of the text now differ from those the subscriber holds,
its c characters are withdrawn and the text sent whole. An offset without a digest (`"<n>-<c>"`, what clients of
an older `serve` hold) is taken to be a prefix of the text now written. Events that describe the run's present rather
than its log (`state`, `approvals`) are snapshots: they carry the current offset and are sent again on every
(re)connection, which is harmless since each replaces the one before.

An offset this run cannot have reached (of an earlier run that had the same id, or past the end of its log) is not
taken at its word, which would send the `end` of a run and none of its steps: the subscriber is
sent a `reset` (drop all you hold of this run), then the whole run from its start, so it ends up holding exactly the
run's log. A 400 would say the same to a client written for it, but a browser's `EventSource` sends its last id by
itself on every reconnection and takes a refusal as the end of the stream, never to try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import re
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from stalwart.client.api import StalwartClient
from stalwart.client.push import PushSource
from stalwart.client.reader import RunWithoutResult
from stalwart.client.stream import crc_hex as _hex
from stalwart.client.stream import digest as digest  # the digest and the run tag the Python stream's offsets carry too
from stalwart.client.stream import read_offset, write_offset
from stalwart.client.stream import run_tag as run_tag
from stalwart.client.stream import utf8 as _utf8
from stalwart.contracts.errors import RunFailed
from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.run import RunState, StepRecord
from stalwart.contracts.stream import StreamProgress

POLL_SECONDS = 0.1
"""How often a watcher reads a run that is working: the model activity publishes text every 50-100 ms."""
IDLE_POLL_SECONDS = 0.5
"""How often it reads one that waits (a session between messages, a call waiting for approval)."""
LIMITS = ("max_steps", "max_seconds", "max_tokens", "max_cost_usd")
"""The budgets a run uses up, which the `state` event shows as its `limits` beside what is used of each."""
_OFFSET = re.compile(r"^(?:([0-9a-f]{8})\.)?(\d{1,9})-(\d{1,12})(?:-([0-9a-f]{8}))?$")


@functools.total_ordering
@dataclass(frozen=True)
class Offset:
    """A point of a run's feed: `records` step records delivered, `chars` characters of the next one's text,
    `digest` of those characters (None when `chars` is 0, or from a client that sent none), and `run`, the tag of
    the run it is a point of (`run_tag`; None from a client of an older `serve`)."""

    records: int = 0
    chars: int = 0
    digest: str | None = None
    run: str | None = None

    def __lt__(self, other: object) -> bool:
        """Offsets of one run are ordered by where they are in it: each one a subscriber is sent is past the last."""
        if not isinstance(other, Offset):
            return NotImplemented
        return (self.records, self.chars) < (other.records, other.chars)

    def __str__(self) -> str:
        return write_offset(self.run, str(self.records), self.chars, self.digest)

    @classmethod
    def parse(cls, text: str) -> Offset:
        """The offset an SSE `id:` carried; a `ValueError` for anything else."""
        kind = (
            "an offset of this server's events: they look like 5e0a77b2.12-340-1a2b3c4d (run.records-characters-digest;"
            " no digest when characters is 0); send back the id of the last event received, as it was"
        )
        return read_offset(cls, _OFFSET, text, kind)


@dataclass(frozen=True)
class FeedEvent:
    """One Server-Sent Event: `kind` is its `event:` name, `data` its JSON."""

    kind: str
    data: dict[str, Any]


class Feed(Protocol):
    """Where the HTTP layer reads a run's events; the polling implementation is `PolledFeed`."""

    def events(self, run_id: str, after: Offset) -> AsyncIterator[tuple[Offset, FeedEvent]]:
        """The run's events after `after`, until the run (or session) ends or the caller stops reading."""
        ...


@dataclass
class Snapshot:
    """What one read of a run found."""

    steps: list[StepRecord]
    live: dict[int, StreamProgress]
    """Answer text of model turns in flight, by step number."""
    state: RunState | None
    approvals: list[dict[str, Any]]
    closed: bool
    error: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    chain: str | None = None
    """The run's tag (`run_tag`), None when the run could not be read."""


class _Watcher:
    """Reads one run for all of its subscribers, while it has any."""

    def __init__(self, client: StalwartClient, run_id: str, *, push: bool = True) -> None:
        self.client = client
        self.run_id = run_id
        self.handle = client.get(run_id)
        self.snapshot: Snapshot | None = None
        self.version = 0
        self.subscribers = 0
        self.changed = asyncio.Condition()
        self.task: asyncio.Task[None] | None = None
        self.push = PushSource(client.temporal, run_id) if push else None
        """The run's one upstream subscription for pushed text, whatever the number of subscribers."""
        self._beats: dict[int, tuple[int, StreamProgress]] = {}
        self._discovered = False
        self._limits: dict[str, Any] | None = None

    def start(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._watch(), name=f"stalwart-serve-watch-{self.run_id}")

    async def _watch(self) -> None:
        forward = asyncio.create_task(self._forward()) if self.push is not None else None
        try:
            await self._poll()
        finally:
            if forward is not None:
                forward.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await forward
            if self.push is not None:
                await self.push.aclose()

    async def _forward(self) -> None:
        """Send pushed text to every subscriber as it comes, between the polls and during them."""
        assert self.push is not None
        while True:
            await self.push.changed.wait()
            self.push.changed.clear()
            async with self.changed:
                if self.snapshot is None or self.snapshot.closed:
                    continue
                self.snapshot = dataclasses.replace(self.snapshot, live=self._live())
                self.version += 1
                self.changed.notify_all()

    def _live(self) -> dict[int, StreamProgress]:
        """Each turn in flight's text from its newest attempt, pushed or read from heartbeats."""
        if self.push is None:
            return {step: progress for step, (_, progress) in self._beats.items()}
        return self.push.merge(self._beats)

    async def _poll(self) -> None:
        while True:
            try:
                snapshot = await self._read()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a server outage: said to subscribers, and tried again
                snapshot = Snapshot([], {}, None, [], closed=False, error=f"cannot read run {self.run_id}: {err}")
                if self.snapshot is not None:
                    self.snapshot.error = snapshot.error
                    snapshot = self.snapshot
            async with self.changed:
                self.snapshot = snapshot
                self.version += 1
                self.changed.notify_all()
            if snapshot.closed:
                return
            working = snapshot.state is not None and snapshot.state.status == "running"
            await self._rest(POLL_SECONDS if working else IDLE_POLL_SECONDS)

    async def _rest(self, seconds: float) -> None:
        """Wait until the next poll, or less when a pushed turn ends (its record is about to be in the log)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        while self.push is not None and self.push.connected and (wait := until - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.push.turn_ended.wait(), wait)
            if self.push.take_ended():
                return
        await asyncio.sleep(max(0.0, until - loop.time()))

    async def _read(self) -> Snapshot:
        temporal = self.client.temporal.get_workflow_handle(self.run_id)
        description = await temporal.describe()
        info = description.raw_description.workflow_execution_info
        chain = run_tag(info.first_run_id) if info.first_run_id else None  # a server too old to say: no check
        if self.push is not None:
            if not self._discovered:  # subscribed before the model writes, wherever its call will run
                self._discovered = True
                await self.push.discover(description.raw_description.execution_config.task_queue.name)
            await self.push.follow_description(description)
        beats: dict[int, tuple[int, StreamProgress]] = {}
        for pending in description.raw_description.pending_activities:
            if pending.activity_type.name != MODEL_ACTIVITY or not pending.heartbeat_details.payloads:
                continue
            [progress] = await self.client.temporal.data_converter.decode(
                pending.heartbeat_details.payloads, [StreamProgress]
            )
            beats[progress.step] = (pending.attempt, progress)
        self._beats = beats
        live = self._live()
        running = description.status == WorkflowExecutionStatus.RUNNING
        if self._limits is None:
            self._limits = await self._read_limits()
        try:
            state = await self.handle.state()
        except (RunWithoutResult, RunFailed) as err:  # closed without a result (terminated, timed out, failed)
            return Snapshot([], {}, None, [], closed=True, error=str(err), limits=self._limits, chain=chain)
        approvals: list[dict[str, Any]] = []
        if running and (state.status == "awaiting_approval" or any(s.ended_at is None for s in state.steps)):
            approvals = [a.model_dump(mode="json") for a in await self.handle.pending_approvals()]
        closed = not running and description.status != WorkflowExecutionStatus.CONTINUED_AS_NEW
        return Snapshot(state.steps, live, state, approvals, closed=closed, limits=self._limits, chain=chain)

    async def _read_limits(self) -> dict[str, Any]:
        """The budgets the run was started with, to show what is used of each."""
        try:
            budgets = (await self.handle.run_input()).agent.budgets
        except Exception:
            return {}
        return {name: getattr(budgets, name) for name in LIMITS}


class PolledFeed:
    """`Feed` with one watcher per run, shared by every subscriber of that run: text pushed by the worker
    where it offers that (`push`), the step log and the rest by polling Temporal."""

    def __init__(self, client: StalwartClient, *, push: bool = True) -> None:
        self.client = client
        self.push = push
        self._watchers: dict[str, _Watcher] = {}
        self._closed = False

    def source(self, run_id: str) -> PushSource | None:
        """The push subscription of a run being watched (None if not watched, or push is off)."""
        watcher = self._watchers.get(run_id)
        return watcher.push if watcher is not None else None

    async def events(self, run_id: str, after: Offset) -> AsyncIterator[tuple[Offset, FeedEvent]]:
        watcher = self._watchers.get(run_id)
        if watcher is None:
            watcher = self._watchers[run_id] = _Watcher(self.client, run_id, push=self.push)
        watcher.subscribers += 1
        watcher.start()
        reader = _Subscriber(run_id, after, self.client.get(run_id).ui_url)
        seen = [0]  # the version last read, in a cell the wait's predicate reads
        try:
            while not self._closed:
                async with watcher.changed:
                    await watcher.changed.wait_for(lambda: watcher.version > seen[0] or self._closed)
                    seen[0], snapshot = watcher.version, watcher.snapshot
                if self._closed or snapshot is None:
                    return
                for item in reader.events(snapshot):
                    yield item
                if reader.ended:
                    return
        finally:
            watcher.subscribers -= 1
            if watcher.subscribers == 0 and self._watchers.get(run_id) is watcher:
                del self._watchers[run_id]
                if watcher.task is not None:
                    watcher.task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await watcher.task

    async def close(self) -> None:
        """End every subscriber's events (a server shutting down: its clients resume elsewhere from their offset)."""
        self._closed = True
        for watcher in list(self._watchers.values()):
            if watcher.task is not None:
                watcher.task.cancel()
            async with watcher.changed:
                watcher.changed.notify_all()


PushFeed = PolledFeed
"""The same feed, named for where its text comes from when workers offer the push channel."""


class _Subscriber:
    """One subscriber's position, and the events that bring it to a snapshot."""

    def __init__(self, run_id: str, after: Offset, ui_url: str) -> None:
        self.run_id = run_id
        self.came = after
        """The offset the subscriber came with, as it sent it."""
        self.run = after.run
        """The tag of the run this subscriber's offsets are points of, once read (the one it sent until then)."""
        self.at = dataclasses.replace(after, run=None)
        self.ui_url = ui_url
        self.shown: str | None = None if after.chars else ""
        """The text sent for record `at.records`; None after a reconnection, when only its length (and digest) is
        known."""
        self.crc = 0
        """The CRC-32 of `shown`'s UTF-8, carried on as text is added so each offset costs only its delta."""
        self.sent: dict[str, Any] = {}
        self.ended = False

    def events(self, snapshot: Snapshot) -> list[tuple[Offset, FeedEvent]]:
        """The events that bring this subscriber to `snapshot`, each with the offset it reaches, tagged with the
        run."""
        out = self._reset(snapshot) + self._catch_up(snapshot)
        return [(dataclasses.replace(offset, run=self.run), event) for offset, event in out]

    def _reset(self, snapshot: Snapshot) -> list[tuple[Offset, FeedEvent]]:
        """A `reset` to the start of the run when this subscriber's offset is no point of it: of another run of the
        same id, or past the end of its log (which only grows)."""
        steps, came = snapshot.steps, self.came
        if snapshot.chain is not None and self.run not in (None, snapshot.chain):
            why = f"{came} is an offset of an earlier run of the id {self.run_id!r}, which has closed since"
        elif snapshot.state is not None and (
            self.at.records > len(steps) or (self.at.records == len(steps) and self.at.chars > 0)
        ):
            why = f"{came} is past the end of run {self.run_id}, whose log has {len(steps)} records"
        else:
            why = None
        self.run = snapshot.chain or self.run
        if why is None:
            return []
        self.at, self.shown, self.crc, self.sent = Offset(), "", 0, {}
        reason = f"{why}: drop what you hold of this run; it is sent again from its start"
        return [(self.at, FeedEvent("reset", {"run_id": self.run_id, "offset": str(came), "reason": reason}))]

    def _catch_up(self, snapshot: Snapshot) -> list[tuple[Offset, FeedEvent]]:
        out: list[tuple[Offset, FeedEvent]] = []
        steps = snapshot.steps
        while self.at.records < len(steps) and steps[self.at.records].ended_at is not None:
            record = steps[self.at.records]
            if record.role == "assistant" and (record.final or self.at.chars):
                target = record.content if record.final and not record.error else ""
                out += self._text_to(record, target, settled=True)
            index = self.at.records
            self.at, self.shown, self.crc = Offset(index + 1, 0), "", 0
            out.append((self.at, FeedEvent("step", {"index": index, "record": record.model_dump(mode="json")})))
        if self.at.records < len(steps):
            record = steps[self.at.records]
            progress = snapshot.live.get(record.step) if record.role == "assistant" else None
            if progress is not None:
                target = "" if progress.retracted else progress.text
                out += self._text_to(record, target, settled=progress.retracted)
        out += self._snapshots(snapshot)
        if snapshot.closed and self.at.records >= len(steps):
            state = snapshot.state
            end = {
                "status": state.status if state else "failed",
                "answer": state.answer if state else None,
                "error": (state.error if state else None) or snapshot.error,
            }
            out.append((self.at, FeedEvent("end", end)))
            self.ended = True
        return out

    def _text_to(self, record: StepRecord, target: str, *, settled: bool) -> list[tuple[Offset, FeedEvent]]:
        """The events that bring record `at.records`'s shown text to `target` (`client.stream.ShownText`'s rule)."""
        index, chars = self.at.records, self.at.chars
        shown = self.shown
        if shown is None:  # reconnected: the subscriber has `chars` characters of what was written, maybe by an
            # attempt since retried; its digest, when it sent one, says whether they are the start of `target`
            if len(target) >= chars and (self.at.digest is None or digest(target[:chars]) == self.at.digest):
                shown = self.shown = target[:chars]
                self.crc = zlib.crc32(_utf8(shown))
            elif len(target) < chars and not settled:
                return []  # a retried attempt still catching up with what the subscriber has
            else:
                shown = "\0" * chars  # other words than the subscriber's, or withdrawn since: matches nothing
        head = {"index": index, "step": record.step}
        if target.startswith(shown):
            if len(target) == len(shown):
                return []
            added = target[len(shown) :]
            self.crc = zlib.crc32(_utf8(added), self.crc)
            self.at, self.shown = Offset(index, len(target), _hex(self.crc)), target
            return [(self.at, FeedEvent("delta", {**head, "text": added}))]
        if shown.startswith(target) and not settled:
            return []
        # `chars` counts code points (Python's `len`), as every offset does: clients remove that many code points.
        events = [(Offset(index, 0), FeedEvent("retract", {**head, "chars": len(shown)}))]
        self.crc = zlib.crc32(_utf8(target))
        self.at, self.shown = Offset(index, len(target), _hex(self.crc) if target else None), target
        if target:
            events.append((self.at, FeedEvent("delta", {**head, "text": target})))
        return events

    def _snapshots(self, snapshot: Snapshot) -> list[tuple[Offset, FeedEvent]]:
        """`state` and `approvals`, when they changed since this subscriber was last sent them."""
        out: list[tuple[Offset, FeedEvent]] = []
        state = snapshot.state
        now: dict[str, Any] = {"run_id": self.run_id, "ui_url": self.ui_url, "error": snapshot.error}
        if state is not None:
            metrics = state.metrics
            now |= {
                "status": state.status,
                "session": state.session,
                "agent": state.agent,
                "turns": state.turns,
                "queued": state.queued,
                "answer": state.answer,
                "usage": state.usage.model_dump(mode="json"),
                "steps_used": metrics.cycles if metrics else None,
                "tokens_used": state.usage.total_tokens,
                "cost_usd": state.usage.cost_usd,
                "limits": snapshot.limits,
                # Tool calls after the records delivered: in flight, waiting for approval, or finished before an
                # earlier call of the same step (delivered as `step` events once every record before them is).
                "open": [
                    {"index": i, "record": s.model_dump(mode="json")}
                    for i, s in enumerate(state.steps)
                    if i >= self.at.records and s.role == "tool"
                ],
            }
        if now != self.sent.get("state"):
            self.sent["state"] = now
            out.append((self.at, FeedEvent("state", now)))
        approvals = {"run_id": self.run_id, "pending": snapshot.approvals}
        if approvals != self.sent.get("approvals"):
            self.sent["approvals"] = approvals
            out.append((self.at, FeedEvent("approvals", approvals)))
        return out


async def exists(client: StalwartClient, run_id: str) -> bool:
    """Whether Temporal knows a run of this id (running or closed)."""
    try:
        await client.temporal.get_workflow_handle(run_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
