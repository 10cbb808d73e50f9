"""`RunHandle.stream(after=offset)`: every event of a run's answer stream carries the offset it brings the stream to,
and a stream started after one yields exactly what followed it, as serve's event stream resumes from Last-Event-ID;
an offset whose text was since rewritten is withdrawn, one of an earlier run of the id is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from stalwart.client.api import RunHandle, StalwartClient
from stalwart.client.stream import (
    AnswerDelta,
    AnswerRetracted,
    ForeignOffset,
    StreamEvent,
    StreamOffset,
    digest,
)
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.worker import build_worker

from wire_server.script import Reply
from wire_server.server import WireServer

ANSWER = "one two three four five six seven eight nine ten eleven twelve"


@pytest.fixture
async def worker(dev_env, task_queue: str) -> AsyncIterator[None]:
    async with build_worker(dev_env.client, task_queue=task_queue):
        yield


@pytest.fixture
def stalwart(dev_env, task_queue: str) -> StalwartClient:
    return StalwartClient(dev_env.client, task_queue=task_queue)


def scripted(answer: str) -> AgentSpec:
    return AgentSpec(name="answering", scripted=[ScriptedReply(text=answer)])


async def _streamed(handle: RunHandle, after: StreamOffset | None = None) -> list[StreamEvent]:
    return [event async for event in handle.stream(poll_interval=0.02, after=after)]


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, AnswerDelta))


async def _finished(stalwart: StalwartClient, answer: str, run_id: str | None = None, **start: bool) -> RunHandle:
    handle = await stalwart.start(scripted(answer), "go", run_id=run_id, **start)
    await handle.result()
    return handle


async def test_a_stream_resumed_after_its_last_offset_yields_exactly_the_text_that_followed(
    stalwart: StalwartClient, worker: None, wire: WireServer, opened
):
    script = wire.script(Reply(text=ANSWER, pause=0.05))
    spec = AgentSpec(name="writer", model="openai-compatible:scripted-words", base_url=script.openai_base_url)
    handle = await stalwart.start(spec, "go")
    opened.append(handle.run_id)
    before: list[StreamEvent] = []
    async for event in handle.stream(poll_interval=0.02):
        before.append(event)
        if len([e for e in before if isinstance(e, AnswerDelta)]) == 2:
            break  # the consumer goes away after two pieces of text, keeping the last offset as text
    kept = str(before[-1].offset)
    rest = await _streamed(handle, after=StreamOffset.parse(kept))
    assert _text(before) + _text(rest) == ANSWER, f"{_text(before)!r} + {_text(rest)!r}"
    assert _text(rest) and not [e for e in rest if isinstance(e, AnswerRetracted)]
    assert rest[-1].offset == StreamOffset(rest[-1].step, len(ANSWER), digest(ANSWER), before[-1].offset.run)


async def test_a_stream_resumed_within_the_text_yields_the_rest_and_after_the_end_nothing(
    stalwart: StalwartClient, worker: None
):
    handle = await _finished(stalwart, ANSWER)
    [whole] = await _streamed(handle)
    assert isinstance(whole, AnswerDelta) and whole.text == ANSWER and whole.offset is not None
    within = StreamOffset(whole.step, 8, digest(ANSWER[:8]), whole.offset.run)
    assert await _streamed(handle, after=within) == [AnswerDelta(whole.step, ANSWER[8:])]
    assert await _streamed(handle, after=whole.offset) == []


async def test_a_stream_resumed_after_text_since_rewritten_withdraws_it_and_yields_the_text_now_written(
    stalwart: StalwartClient, worker: None
):
    handle = await _finished(stalwart, ANSWER)
    [whole] = await _streamed(handle)
    assert whole.offset is not None
    other_words = StreamOffset(whole.step, 8, digest("ten nine"), whole.offset.run)
    resumed = await _streamed(handle, after=other_words)
    assert resumed == [AnswerRetracted(whole.step, "", 8), AnswerDelta(whole.step, ANSWER)]


async def test_an_offset_of_an_earlier_run_of_the_same_id_is_refused_saying_to_stream_from_the_start(
    stalwart: StalwartClient, worker: None
):
    run_id = f"again-{uuid4().hex[:8]}"
    first = await _finished(stalwart, "the first", run_id)
    [held] = await _streamed(first)
    second = await _finished(stalwart, "the second", run_id, reuse_id=True)
    with pytest.raises(ForeignOffset) as refused:
        await _streamed(second, after=held.offset)
    assert "an offset of an earlier run" in str(refused.value) and "from its start (no `after`)" in str(refused.value)
    assert _text(await _streamed(second)) == "the second"


def test_an_offset_reads_back_as_itself_and_anything_else_is_refused():
    for offset in (StreamOffset(3, 120, "1a2b3c4d", "5e0a77b2"), StreamOffset(7), StreamOffset(2, 4, None, "5e0a77b2")):
        assert StreamOffset.parse(str(offset)) == offset
    for text in ("5e0a77b2.4-120-9f3c02d1", "s3-0-1a2b3c4d", "s-1-0", ""):
        with pytest.raises(ValueError, match="not an offset of a run's answer stream"):
            StreamOffset.parse(text)
