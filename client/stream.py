"""Follow a run's final answer as the model generates it.

The model activity publishes the answer text so far as its heartbeat details
(`contracts/stream.py`); this reads them with DescribeWorkflowExecution, which
adds nothing to the run's history. What a retried attempt generates again is
not yielded again: text is compared with what was already yielded for the
step, and only what is new comes out. Text of a turn that may call tools is
buffered on the worker until the turn proves final (Prompty §9.3), so no text
of an iteration that calls tools ever arrives here; when a retried attempt
writes something different, an `AnswerRetracted` withdraws the text that was shown.

The text comes by push when the workers offer it (`client/push.py`): each chunk is
yielded as it reaches this process, between the polls, which are left to read
the step log (and the heartbeats, for a worker without the push channel). Pushed
text and heartbeat text go through the same comparison, so neither path yields
anything twice.

The concatenation of the deltas (minus retracted text) is the run's answer
when it ends `done`.

Each event carries the `StreamOffset` it brings the stream to, and a stream
started `after` one yields exactly what followed it. An offset names a model
step, not a record of the step log as `stalwart serve`'s event ids do: this
stream yields the answer's text, keyed by step, and reads the step log only
when a step ends, and step numbers go on increasing across continue-as-new, so
a step names one point of the whole chain. The rest is serve's: the digest of
the characters yielded, so text a retried attempt rewrote since is withdrawn
rather than continued, and the run's tag, so an offset of an earlier run under
the same id is refused (`ForeignOffset`) rather than read as a point of this one.
Steps are yielded in order (`StepOrder`), so that an offset's "every step before
mine is done with" holds, and the step log read is the whole continue-as-new
chain's when `RunHandle.stream` gives it, so a session's answers are not lost as
it continues as new.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from stalwart.client.push import PushSource
from stalwart.client.run_failures import RunEndedInError
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.errors import UsageError
from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.run import AgentResult, RunState, StepRecord, progress_block
from stalwart.contracts.stream import StreamProgress

_OFFSET = re.compile(r"^(?:([0-9a-f]{8})\.)?s(\d{1,18})-(\d{1,12})(?:-([0-9a-f]{8}))?$")


def digest(text: str) -> str:
    """The digest an offset carries of the text delivered: 8 hex digits of the CRC-32 of its UTF-8."""
    return crc_hex(zlib.crc32(utf8(text)))


def utf8(text: str) -> bytes:
    """A lone surrogate (JSON can carry one) is encoded as itself rather than refused: every text has a digest."""
    return text.encode("utf-8", "surrogatepass")


def crc_hex(crc: int) -> str:
    return f"{crc:08x}"


def run_tag(first_run_id: str) -> str:
    """What an offset carries of the run it is a point of: 8 hex digits of the CRC-32 of the Temporal run id that
    began its continue-as-new chain, which stays the same as the chain continues and differs for a reused id."""
    return crc_hex(zlib.crc32(first_run_id.encode()))


@dataclass(frozen=True)
class StreamOffset:
    """A point of a run's answer stream (`RunHandle.stream(after=...)` resumes after it): `chars` characters of
    model step `step`'s text yielded, `digest` of them (None when `chars` is 0), every step before `step` done with,
    in the run tagged `run` (`run_tag`). `str()` writes it to keep, `parse` reads it back."""

    step: int = 0
    chars: int = 0
    digest: str | None = None
    run: str | None = None

    def __post_init__(self) -> None:
        """Refuses fields `str()` could not write for `parse` to read back."""
        problems = [
            *(f"{name} must be an int of at least 0" for name in ("step", "chars") if not _count(getattr(self, name))),
            *(f"{name} must be 8 hex digits or None" for name in ("digest", "run") if not _hex8(getattr(self, name))),
        ]
        if self.digest is not None and self.chars == 0:
            problems.append("a digest of no characters is none: give digest=None when chars is 0")
        if problems:
            raise ValueError(f"StreamOffset{(self.step, self.chars, self.digest, self.run)}: " + "; ".join(problems))

    def __str__(self) -> str:
        return write_offset(self.run, f"s{self.step}", self.chars, self.digest)

    @classmethod
    def parse(cls, text: str) -> StreamOffset:
        """The offset `str()` wrote; a `ValueError` for anything else."""
        kind = (
            "an offset of a run's answer stream: they look like 5e0a77b2.s3-120-1a2b3c4d (run.sSTEP-characters-digest;"
            " no digest when characters is 0), as str() of an event's offset writes them"
        )
        return read_offset(cls, _OFFSET, text, kind)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _hex8(value: object) -> bool:
    return value is None or (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{8}", value) is not None)


_O = TypeVar("_O")


def write_offset(run: str | None, position: str, chars: int, digest: str | None) -> str:
    """An offset as `read_offset` reads it back: `run.` when it names its run, the position, the characters, and
    their digest when there are some. This stream's offsets and serve's are written alike."""
    point = f"{position}-{chars}" + (f"-{digest}" if chars and digest else "")
    return f"{run}.{point}" if run else point


def read_offset(
    cls: Callable[[int, int, str | None, str | None], _O], pattern: re.Pattern[str], text: str, kind: str
) -> _O:
    """An offset as written (`pattern`'s groups: run, position, characters, digest), or a `ValueError` saying it is
    not `kind`; a digest of no characters is none. This stream's offsets and serve's are read alike."""
    matched = pattern.match(text.strip())
    if matched is None or (matched.group(4) is not None and int(matched.group(3)) == 0):
        raise ValueError(f"{text!r} is not {kind}")
    run, at, chars, crc = matched.groups()
    return cls(int(at), int(chars), crc, run)


class ForeignOffset(UsageError, ValueError):
    """A stream was asked to resume after an offset that is no point of this run: it carries another run's tag (an
    earlier run that had the same id, or another run altogether: a tag cannot tell which), or names a step past the
    run's last. Drop what you hold of the run, and stream it from its start (no `after`)."""


@dataclass(frozen=True)
class AnswerDelta:
    """New answer text of model step `step`: print it. `offset` is where the stream is once it is yielded."""

    step: int
    text: str
    offset: StreamOffset | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AnswerRetracted:
    """Text already yielded for `step` is not the answer (the model went on to call a tool, or a retry diverged):
    drop all of it, `chars` characters. `text` is that text, or '' when it was yielded before the offset the stream
    resumed after (only its length is known then)."""

    step: int
    text: str
    chars: int = -1
    offset: StreamOffset | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.chars < 0:
            object.__setattr__(self, "chars", len(self.text))


@dataclass(frozen=True)
class Progress:
    """An action about to run, as seed 000 announces it: `block` is `{"type": "progress", "step": i,
    "max_steps": N, "action": "tool_call" | "delegate", "target": name}`. Yielded only when asked for
    (`stream(progress=True)`, `watch(progress=True)`), before the action's step record."""

    step: int
    max_steps: int
    action: str
    target: str
    call_id: str | None = None
    offset: StreamOffset | None = field(default=None, compare=False)
    """Where the text stands; a stream resumed after it announces this step's actions again (at least once)."""

    @classmethod
    def of(cls, record: StepRecord, max_steps: int) -> Progress:
        block = progress_block(record, max_steps)
        return cls(record.step, max_steps, str(block["action"]), record.tool_name or "", record.tool_call_id)

    @property
    def block(self) -> dict[str, object]:
        return {
            "type": "progress",
            "step": self.step,
            "max_steps": self.max_steps,
            "action": self.action,
            "target": self.target,
        }

    @property
    def key(self) -> tuple[int, str | None, str]:
        """Tells actions apart across polls (and across continue-as-new, where the step log starts anew)."""
        return (self.step, self.call_id, self.target)


StreamEvent = AnswerDelta | AnswerRetracted | Progress


class StepOrder:
    """Which step's live text may be yielded now: the stream yields steps in order, as its offsets say (every step
    before an offset's own is done with), so a consumer that resumes after one neither misses nor repeats text.

    A step's live text can reach this process before the steps before it are read from the step log: a session's
    next turn is pushed while the turns it answered before the stream started, or too quickly for the heartbeats
    polled, are only in the log. So a step's text waits until the log was read with every step before it ended, and
    until every step shown before it is settled (its answer, or its text withdrawn).
    """

    def __init__(self, after: StreamOffset | None) -> None:
        self.read_through = after.step if after is not None else 1
        """Every step before this one had ended when the step log was last read, or before the offset (the first
        model step, 1, has only the goal before it)."""

    def read(self, steps: list[StepRecord], live_before: set[int]) -> None:
        """The log was read (`steps`), after live text of `live_before` was seen: the steps before those had ended."""
        unended = [r.step for r in steps if r.ended_at is None]
        ended_through = min(unended) if unended else max((r.step for r in steps), default=-1) + 1
        self.read_through = max(self.read_through, ended_through, *live_before)

    def finish(self) -> None:
        """The run has closed: its whole log is read."""
        self.read_through = _EVERY_STEP

    def waits_for_log(self, step: int) -> bool:
        return step > self.read_through


_EVERY_STEP = 2**63
_BEFORE_FIRST_TASK = 3
"""The events of a run's history before its first workflow task is done: started, task scheduled, task started."""


class ShownText:
    """What was yielded per step, and the events that bring a step to a new text.

    A retried attempt that regenerates the same words yields nothing until it
    writes past what was shown; one that writes something else withdraws the
    old text first. Started `after` an offset, the steps before its step were
    yielded already, and so were its step's first `chars` characters, of which
    only the digest is known until the text is read.
    """

    def __init__(self, after: StreamOffset | None = None) -> None:
        self.text: dict[int, str] = {}
        self.after = after or StreamOffset()
        self.run: str | None = None
        """The tag of the run, once read: every offset carries it."""
        self._held = self.after if self.after.chars else None

    def behind(self, step: int) -> bool:
        """Whether `step` was done with before the offset the stream started after."""
        return step < self.after.step

    def pending(self) -> set[int]:
        """The steps some text was yielded of, before the offset (held, known by digest) or since."""
        return set(self.text) | ({self._held.step} if self._held is not None else set())

    def offset(self, step: int) -> StreamOffset:
        """Where the stream is once `step`'s text is what was yielded of it."""
        if self._held is not None and self._held.step == step:
            return dataclasses.replace(self._held, run=self.run)
        text = self.text.get(step, "")
        return StreamOffset(step, len(text), digest(text) if text else None, self.run)

    def to(self, step: int, target: str, *, settled: bool) -> list[StreamEvent]:
        if self.behind(step):
            return []
        held = self._held
        if held is not None and held.step == step:  # the characters yielded before the offset, known by digest
            if len(target) >= held.chars and held.digest in (None, digest(target[: held.chars])):
                self.text[step], self._held = target[: held.chars], None
            elif len(target) < held.chars and not settled:
                return []  # a retried attempt still catching up with what was yielded
            else:  # other words than those yielded, or withdrawn since
                self.text[step], self._held = target, None
                events: list[StreamEvent] = [AnswerRetracted(step, "", held.chars, StreamOffset(step, run=self.run))]
                return events + ([AnswerDelta(step, target, self.offset(step))] if target else [])
        shown = self.text.get(step, "")
        if target.startswith(shown):
            self.text[step] = target
            return [AnswerDelta(step, target[len(shown) :], self.offset(step))] if len(target) > len(shown) else []
        if shown.startswith(target) and not settled:
            return []  # a retried attempt catching up with what was shown: nothing new yet
        self.text[step] = target
        events = [AnswerRetracted(step, shown, offset=StreamOffset(step, run=self.run))]
        return events + ([AnswerDelta(step, target, self.offset(step))] if target else [])


async def stream_answer(
    handle: WorkflowHandle[Any, Any],
    *,
    poll_interval: float = 0.1,
    live_state: Callable[[], Awaitable[RunState]] | None = None,
    result: Callable[[], Awaitable[AgentResult]] | None = None,
    progress_max_steps: int | None = None,
    push: bool = True,
    on_push: Callable[[PushSource], None] | None = None,
    after: StreamOffset | str | None = None,
) -> AsyncIterator[StreamEvent]:
    """Yield the answer's text as it is generated, until the run ends; with `after` (a `StreamOffset` or its `str()`),
    only what followed that offset.

    With `push` (and workers that offer it), text is yielded as the worker pushes it. The run is polled every
    `poll_interval` seconds for its step log, and for heartbeat text where nothing is pushed (the server learns
    it at the worker's heartbeat throttle, see `activities.streaming`). `on_push` is given the push source once
    it exists (tests count what came through it).
    `live_state` asks the running workflow for its `state`, and `result` waits for the run's result (default: a
    query on `handle`, and its result, which hold the steps of its latest run only; `RunHandle.stream` gives the
    whole continue-as-new chain's, so a session's answers are not lost as it continues as new).
    With `progress_max_steps` (the agent's `max_steps`), each action is announced by a `Progress`
    before it runs, as seed 000 streams its progress blocks.
    """
    if isinstance(after, str):
        after = StreamOffset.parse(after)
    elif after is not None and not isinstance(after, StreamOffset):
        raise TypeError(f"after= takes a StreamOffset (an event's offset) or its str(), not {after!r}")
    if live_state is None:
        live_state = lambda: handle.query("state", result_type=RunState)  # noqa: E731
    if result is None:
        result = handle.result
    # The client's own converter: heartbeats are written through the worker's codec (encrypted, when keys are set).
    client = getattr(handle, "_client", None)
    converter = client.data_converter if client is not None else DATA_CONVERTER
    source = PushSource(client, handle.id) if push and client is not None else None
    if source is not None and on_push is not None:
        on_push(source)
    reads = _Reads(live_state, result)
    try:
        async for event in _follow(handle, poll_interval, reads, progress_max_steps, converter, source, after):
            yield event
    finally:
        if source is not None:
            await source.aclose()


@dataclass(frozen=True)
class _Reads:
    """How the stream reads the run's step log: live, and once it has closed."""

    live_state: Callable[[], Awaitable[RunState]]
    result: Callable[[], Awaitable[AgentResult]]


async def _follow(
    handle: WorkflowHandle[Any, Any],
    poll_interval: float,
    reads: _Reads,
    progress_max_steps: int | None,
    converter: Any,
    source: PushSource | None,
    after: StreamOffset | None,
) -> AsyncIterator[StreamEvent]:
    shown = ShownText(after)
    order = StepOrder(after)
    settled: set[int] = set()
    announced: set[tuple[int, str | None, str]] = set()

    def announce(steps: list[StepRecord]) -> list[StreamEvent]:
        if progress_max_steps is None:
            return []
        tools = [r for r in steps if r.role == "tool" and not shown.behind(r.step)]
        fresh = [p for p in (Progress.of(r, progress_max_steps) for r in tools) if p.key not in announced]
        announced.update(p.key for p in fresh)
        return [dataclasses.replace(p, offset=shown.offset(p.step)) for p in fresh]

    beats: dict[int, tuple[int, StreamProgress]] = {}
    unchecked = after  # an offset is checked against the first log read: it must name a step the run has reached

    def unread() -> bool:
        """Whether live text waits for the steps before it to be read from the log."""
        return any(step not in settled and order.waits_for_log(step) for step in _newest(beats, source))

    def ready(step: int) -> bool:
        return not order.waits_for_log(step) and all(s in settled for s in shown.pending() if s < step)

    def pushed() -> list[StreamEvent]:
        """What live text brings that was not yielded yet, in step order."""
        events: list[StreamEvent] = []
        for step, progress in sorted(_newest(beats, source).items()):
            if step in settled:
                continue
            if not ready(step):
                break
            # A retraction is final at once; live text may be a retry catching up.
            events += shown.to(step, "" if progress.retracted else progress.text, settled=progress.retracted)
        return events

    def settle(steps: list[StepRecord]) -> list[StreamEvent]:
        nonlocal unchecked
        if unchecked is not None:
            _reached(unchecked, steps, handle.id)
            unchecked = None
        return _settle(shown, settled, steps, _newest(beats, source))

    async def meanwhile(call: Awaitable[Any], box: list[Any]) -> AsyncIterator[StreamEvent]:
        """Await `call` into `box`, yielding pushed text as it comes meanwhile: a poll never holds it up."""
        task = asyncio.ensure_future(call)
        try:
            while source is not None and source.connected and not task.done():
                source.changed.clear()
                changed = asyncio.ensure_future(source.changed.wait())
                await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                for event in pushed():
                    yield event
            box.append(await task)
        finally:
            task.cancel()

    async def read_log() -> AsyncIterator[StreamEvent]:
        """Read the step log: settle the steps that ended, then yield the live text that waited for them."""
        box: list[Any] = []
        live_before = set(_newest(beats, source))
        async for event in meanwhile(reads.live_state(), box):
            yield event
        steps = box.pop().steps
        order.read(steps, live_before)
        for event in [*announce(steps), *settle(steps), *pushed()]:
            yield event

    discovered = False
    history_length: tuple[str | None, int] | None = None
    while True:
        box: list[Any] = []
        async for event in meanwhile(handle.describe(), box):
            yield event
        description = box.pop()
        if shown.run is None:
            shown.run = _tag(description, after)
        if description.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            # A handle of the run that started the chain (as `start` gives it) reads that run only: the chain goes on.
            handle = handle._client.get_workflow_handle(handle.id, result_type=handle._result_type)
            continue
        if source is not None:
            if not discovered:  # subscribed before the model writes, wherever its call will run
                discovered = True
                await source.discover(description.raw_description.execution_config.task_queue.name)
            await source.follow_description(description)
        beats = {}
        for pending in description.raw_description.pending_activities:
            if pending.activity_type.name != MODEL_ACTIVITY or not pending.heartbeat_details.payloads:
                continue
            [progress] = await converter.decode(pending.heartbeat_details.payloads, [StreamProgress])
            beats[progress.step] = (pending.attempt, progress)
        if description.status != WorkflowExecutionStatus.RUNNING:
            try:
                ended: AgentResult = await reads.result()
            except RunEndedInError:
                raise
            except WorkflowFailureError as failure:
                raise RunEndedInError(failure) from failure.cause
            order.finish()
            for event in [*announce(ended.steps), *settle(ended.steps), *pushed()]:
                yield event
            return
        live = _newest(beats, source)
        unsettled = any(step not in live and step not in settled for step in shown.pending())
        # The run's history grew since the log was last read and it waits on nothing: a turn may have ended whose
        # text was never live here (a session's, idle since). Not read while it works, nor before its first workflow
        # task is done: a query then costs a run of Temporal's time-skipping test server a workflow task of its own,
        # and reads nothing the stream would not read anyway.
        raw = description.raw_description
        events = raw.workflow_execution_info.history_length
        idle = events > _BEFORE_FIRST_TASK and not raw.pending_activities and not raw.HasField("pending_workflow_task")
        length = (description.run_id, events)  # of the chain's latest run: each run's history starts anew
        grown = idle and length != history_length
        # Read after `describe`: the actions of steps before any text seen there are in this state already.
        if grown or unsettled or unread() or unchecked is not None or progress_max_steps is not None:
            history_length = length
            async for event in read_log():
                yield event
        else:
            for event in pushed():
                yield event
        if source is None:
            await asyncio.sleep(poll_interval)
            continue
        # Until the next poll, yield pushed text as it comes; a turn that ends calls for reading the run now.
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_interval
        while source.connected and (wait := until - loop.time()) > 0:
            source.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(source.changed.wait(), wait)
            if source.take_ended():
                break
            for event in pushed():
                yield event
            if unread():  # a new step's text: the steps before it are read first (a query, not a poll)
                async for event in read_log():
                    yield event
        else:
            await asyncio.sleep(max(0.0, until - loop.time()))


def _tag(description: Any, after: StreamOffset | None) -> str | None:
    """The run's tag (None from a server too old to say), once `after`, if it names a run, is found to be of it."""
    first_run_id = description.raw_description.workflow_execution_info.first_run_id
    tag = run_tag(first_run_id) if first_run_id else None
    if after is not None and after.run is not None and tag is not None and after.run != tag:
        raise ForeignOffset(
            f"{after} is not an offset of run {description.id!r}: it carries the tag {after.run}, and this run's is"
            f" {tag} (an earlier run that had this id, or another run); drop what you hold of this run and stream it"
            " from its start (no `after`)"
        )
    return tag


def _reached(after: StreamOffset, steps: list[StepRecord], run_id: str) -> None:
    """Refuses an offset of a step the run has not reached: no stream of it yielded that offset."""
    last = max((r.step for r in steps), default=0)
    if after.step > last:
        raise ForeignOffset(
            f"{after} is not an offset of run {run_id!r}: it names step {after.step}, and the run's last step is"
            f" {last}; drop what you hold of this run and stream it from its start (no `after`)"
        )


def _newest(beats: dict[int, tuple[int, StreamProgress]], source: PushSource | None) -> dict[int, StreamProgress]:
    """Each turn in flight's text from its newest attempt, pushed or read from heartbeats."""
    if source is None:
        return {step: progress for step, (_, progress) in beats.items()}
    return source.merge(beats)


def _settle(
    shown: ShownText, settled: set[int], steps: list[StepRecord], live: dict[int, StreamProgress]
) -> list[StreamEvent]:
    """Bring finished model steps to their final text: the answer for the final step, nothing for the others.

    A step still in `live` may have an attempt in flight, and is left to it, unless its record holds the answer: no
    attempt comes after that, and pushed text that had not all arrived when the run was read must not cut it short.
    A step shown that is older than the log read (a run of the chain whose steps this read does not hold) is left as
    it was shown: nothing here says otherwise.
    """
    events: list[StreamEvent] = []
    for record in steps:
        if record.role != "assistant" or record.ended_at is None or record.step in settled:
            continue
        if record.step in live and not record.final:
            continue
        if record.final or record.step in shown.pending():
            events += shown.to(record.step, record.content if record.final and not record.error else "", settled=True)
        settled.add(record.step)
    if steps:
        settled.update(step for step in shown.pending() if step < steps[0].step)
    return events
