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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from stalwart.client.push import PushSource
from stalwart.client.run_failures import RunEndedInError
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.run import AgentResult, RunState, StepRecord, progress_block
from stalwart.contracts.stream import StreamProgress


@dataclass(frozen=True)
class AnswerDelta:
    """New answer text of model step `step`: print it."""

    step: int
    text: str


@dataclass(frozen=True)
class AnswerRetracted:
    """Text already yielded for `step` is not the answer (the model went on to call a tool, or a retry diverged)."""

    step: int
    text: str


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


class ShownText:
    """What was yielded per step, and the events that bring a step to a new text.

    A retried attempt that regenerates the same words yields nothing until it
    writes past what was shown; one that writes something else withdraws the
    old text first.
    """

    def __init__(self) -> None:
        self.text: dict[int, str] = {}

    def to(self, step: int, target: str, *, settled: bool) -> list[StreamEvent]:
        shown = self.text.get(step, "")
        if target.startswith(shown):
            self.text[step] = target
            return [AnswerDelta(step, target[len(shown) :])] if len(target) > len(shown) else []
        if shown.startswith(target) and not settled:
            return []  # a retried attempt catching up with what was shown: nothing new yet
        self.text[step] = target
        events: list[StreamEvent] = [AnswerRetracted(step, shown)]
        return events + ([AnswerDelta(step, target)] if target else [])


async def stream_answer(
    handle: WorkflowHandle[Any, Any],
    *,
    poll_interval: float = 0.1,
    live_state: Callable[[], Awaitable[RunState]] | None = None,
    progress_max_steps: int | None = None,
    push: bool = True,
    on_push: Callable[[PushSource], None] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Yield the answer's text as it is generated, until the run ends.

    With `push` (and workers that offer it), text is yielded as the worker pushes it. The run is polled every
    `poll_interval` seconds for its step log, and for heartbeat text where nothing is pushed (the server learns
    it at the worker's heartbeat throttle, see `activities.streaming`). `on_push` is given the push source once
    it exists (tests count what came through it).
    `live_state` asks the running workflow for its `state` (default: a query on `handle`).
    With `progress_max_steps` (the agent's `max_steps`), each action is announced by a `Progress`
    before it runs, as seed 000 streams its progress blocks.
    """
    if live_state is None:
        live_state = lambda: handle.query("state", result_type=RunState)  # noqa: E731
    # The client's own converter: heartbeats are written through the worker's codec (encrypted, when keys are set).
    client = getattr(handle, "_client", None)
    converter = client.data_converter if client is not None else DATA_CONVERTER
    source = PushSource(client, handle.id) if push and client is not None else None
    if source is not None and on_push is not None:
        on_push(source)
    try:
        async for event in _follow(handle, poll_interval, live_state, progress_max_steps, converter, source):
            yield event
    finally:
        if source is not None:
            await source.aclose()


async def _follow(
    handle: WorkflowHandle[Any, Any],
    poll_interval: float,
    live_state: Callable[[], Awaitable[RunState]],
    progress_max_steps: int | None,
    converter: Any,
    source: PushSource | None,
) -> AsyncIterator[StreamEvent]:
    shown = ShownText()
    settled: set[int] = set()
    announced: set[tuple[int, str | None, str]] = set()

    def announce(steps: list[StepRecord]) -> list[StreamEvent]:
        if progress_max_steps is None:
            return []
        fresh = [p for p in (Progress.of(r, progress_max_steps) for r in steps if r.role == "tool")]
        fresh = [p for p in fresh if p.key not in announced]
        announced.update(p.key for p in fresh)
        return list(fresh)

    beats: dict[int, tuple[int, StreamProgress]] = {}

    def pushed() -> list[StreamEvent]:
        """What pushed text brings that was not yielded yet."""
        events: list[StreamEvent] = []
        for step, progress in sorted(_newest(beats, source).items()):
            if step not in settled:  # a retraction is final at once; live text may be a retry catching up
                events += shown.to(step, "" if progress.retracted else progress.text, settled=progress.retracted)
        return events

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

    discovered = False
    while True:
        box: list[Any] = []
        async for event in meanwhile(handle.describe(), box):
            yield event
        description = box.pop()
        if source is not None:
            if not discovered:  # subscribed before the model writes, wherever its call will run
                discovered = True
                await source.discover(description.raw_description.execution_config.task_queue.name)
            await source.follow_description(description)
        if progress_max_steps is not None and description.status == WorkflowExecutionStatus.RUNNING:
            # Read after `describe`: the actions of steps before any text seen there are in this state already.
            async for event in meanwhile(live_state(), box):
                yield event
            for event in announce(box.pop().steps):
                yield event
        beats = {}
        for pending in description.raw_description.pending_activities:
            if pending.activity_type.name != MODEL_ACTIVITY or not pending.heartbeat_details.payloads:
                continue
            [progress] = await converter.decode(pending.heartbeat_details.payloads, [StreamProgress])
            beats[progress.step] = (pending.attempt, progress)
        live = _newest(beats, source)
        for event in pushed():
            yield event
        if description.status != WorkflowExecutionStatus.RUNNING:
            try:
                result: AgentResult = await handle.result()
            except WorkflowFailureError as failure:
                raise RunEndedInError(failure) from failure.cause
            for event in announce(result.steps):
                yield event
            for event in _settle(shown, settled, result.steps, live):
                yield event
            return
        if any(step not in live and step not in settled for step in shown.text):
            async for event in meanwhile(live_state(), box):
                yield event
            for event in _settle(shown, settled, box.pop().steps, live):
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
        else:
            await asyncio.sleep(max(0.0, until - loop.time()))


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
    """
    events: list[StreamEvent] = []
    for record in steps:
        if record.role != "assistant" or record.ended_at is None or record.step in settled:
            continue
        if record.step in live and not record.final:
            continue
        if record.final or record.step in shown.text:
            events += shown.to(record.step, record.content if record.final and not record.error else "", settled=True)
        settled.add(record.step)
    return events
