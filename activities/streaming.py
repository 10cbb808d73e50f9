"""Live answer text from a model turn, pushed to subscribers and published as activity heartbeats.

Pushed: each chunk goes at once to the worker's stream broker (`activities/stream_broker.py`), which sends it
to the run's subscribers, so text reaches them within milliseconds of reaching the worker.

Why heartbeats: they carry the text to any client (which reads the pending
activity with DescribeWorkflowExecution) without adding a single history
event, the client compares a retried attempt's text with what it already
printed so nothing is repeated (`client/stream.py`), and they double as the
liveness signal the heartbeat timeout needs. The SDK throttles heartbeats;
`build_worker` sets `max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE` so text arrives promptly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Protocol

from stalwart.activities import secrets, stream_broker
from stalwart.activities.heartbeats import heartbeating
from stalwart.contracts.stream import StreamChunk, StreamProgress

HEARTBEAT_THROTTLE = timedelta(milliseconds=100)
"""Pass as the worker's `max_heartbeat_throttle_interval`: how often live text reaches the server."""

KEEPALIVE_SECONDS = 1.0
"""How often a model call heartbeats while nothing new arrives: how soon it hears of its cancellation (a budget
or a user's cancel), and far within the heartbeat timeout. Each heartbeat is a write on the server (and a billed
action on Temporal Cloud), so a model that thinks for a minute before its first token costs 60 of them, not 240."""
PUBLISH_EVERY_SECONDS = 0.05


class TurnObserver(Protocol):
    """What a streaming provider reports while a turn is generated."""

    def text(self, delta: str) -> None:
        """Assistant text, as generated."""

    def tool_call(self) -> None:
        """The turn calls a tool: its text is not the final answer.

        The observer enforces what follows, so providers need not: text held
        so far is dropped (or, for a turn that could not call tools, retracted)
        and text reported after this is ignored. Calling it again (say, once per
        streamed argument chunk) changes nothing.
        """

    def chunk(self) -> None:
        """Anything arrived from the model (keeps the activity alive)."""


class AnswerPublisher:
    """Publishes the text of a turn that is known to be the final answer, as it is generated.

    A turn that may still call tools (`hold`) publishes none of its text, as Prompty §9.3 buffers tool-calling
    iterations: text from an iteration that goes on to call tools never reaches a client, and the text of one
    that ends without calling a tool reaches it with the activity's result (the step log `stream()` reads).
    A turn that cannot call tools (tools off: seed 000's phase 2, the finalize call, an agent without tools)
    streams as it arrives.

    Each chunk is pushed to the worker's stream broker as it arrives (`push`, found from the running activity
    unless given); heartbeats, at most every PUBLISH_EVERY_SECONDS, stay the record a client without the push
    channel reads, and the one a retried attempt is compared with.

    Both carry the text redacted (`secrets.RedactedStream`), never as the model wrote it: a key the model echoes,
    or the start of one while the rest is still to come, reaches no subscriber on either path, and what they are
    shown is the start of the answer the run records (redacted the same way).
    """

    def __init__(
        self,
        step: int,
        publish: Callable[[StreamProgress], None],
        *,
        hold: bool = False,
        push: Callable[[StreamChunk], None] | None = None,
        attempt: int | None = None,
    ) -> None:
        self._progress = StreamProgress(step=step)
        """What subscribers were last shown (`text` is set when published; `_text()` is the text so far)."""
        self._redacted = secrets.RedactedStream()
        self._changed = False
        """Whether the text changed since it was last published."""
        self._publish = publish
        self._push = push if push is not None else stream_broker.publisher()
        self._attempt = attempt if attempt is not None else stream_broker.current_attempt()
        self._pushed = False
        self._published_at = 0.0
        self._shown = ""
        self._hold = hold
        self._later: asyncio.TimerHandle | None = None

    def text(self, delta: str) -> None:
        if self._progress.retracted or not delta:
            return
        if self._hold:
            return  # nothing of a held turn is published
        change = self._redacted.extend(delta)  # the change only: a delta costs its own length, not the text's
        if change is None:
            return  # held back: it may be the start of a secret
        self._changed = True
        self._push_chunk(at=change[0], text=change[1])
        self.chunk()

    def tool_call(self) -> None:
        if self._progress.retracted:
            return
        if self._hold:  # nothing of this turn was published: nothing to retract
            self._progress = self._progress.model_copy(update={"retracted": True})
            return
        self._progress = self._progress.model_copy(update={"retracted": True})
        self._changed = True
        if self._pushed:
            self._push_chunk(retracted=True)
        self.flush_if_shown_differs()

    def chunk(self) -> None:
        """Publish text no client has seen: the first words at once, then at most every PUBLISH_EVERY_SECONDS.

        Only new text is worth a heartbeat here; keeping the activity alive while nothing new arrives is the
        keepalive's job. (A heartbeat for the stream's first, empty event used to spend the SDK's first
        unthrottled heartbeat, so the first words waited out the throttle.)
        """
        if not self._differs():
            return
        wait = PUBLISH_EVERY_SECONDS - (time.monotonic() - self._published_at)
        if not self._shown or wait <= 0:
            self.flush()
        elif self._later is None:  # text that arrived too soon goes out when the interval ends, pause or not
            self._later = asyncio.get_running_loop().call_later(wait, self.flush_if_shown_differs)

    def flush(self) -> None:
        self._cancel_later()
        self._published_at = time.monotonic()
        if self._changed:
            self._progress = self._progress.model_copy(update={"text": self._text()})
            self._changed = False
        self._shown = self._progress.text
        self._publish(self._progress)

    def flush_if_shown_differs(self) -> None:
        """Publish only what a client would see change: a turn that never showed text needs no heartbeat to say so."""
        self._later = None
        if self._differs():
            self.flush()

    def _text(self) -> str:
        """The text subscribers may be shown now: joined only to be published, not at every delta."""
        return "" if self._progress.retracted else self._redacted.shown

    def _differs(self) -> bool:
        """Whether the text differs from what was last published (compared whole only when the lengths match)."""
        if not self._changed:
            return False
        length = 0 if self._progress.retracted else self._redacted.length
        if length != len(self._shown) or self._text() != self._shown:
            return True
        self._changed = False
        return False

    def close(self) -> None:
        """The turn is over: drop text waiting for the interval, which the activity's result carries, and tell
        subscribers to read the step log from now on."""
        self._cancel_later()
        if self._pushed:
            self._push_chunk(ended=True)
            self._pushed = False

    def _push_chunk(self, *, at: int = 0, text: str = "", retracted: bool = False, ended: bool = False) -> None:
        if self._push is None:
            return
        self._pushed = True
        step, attempt = self._progress.step, self._attempt
        self._push(StreamChunk(step=step, attempt=attempt, at=at, text=text, retracted=retracted, ended=ended))

    def _cancel_later(self) -> None:
        if self._later is not None:
            self._later.cancel()
            self._later = None


@asynccontextmanager
async def keepalive(publisher: AnswerPublisher) -> AsyncIterator[None]:
    """Heartbeat while waiting on the model, so only a dead worker, not a slow model, trips the heartbeat timeout;
    when the block ends, so does all publishing."""
    try:
        async with heartbeating(KEEPALIVE_SECONDS, publisher.flush):
            yield
    finally:
        publisher.close()
