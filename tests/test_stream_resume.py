"""`RunHandle.stream(after=offset)`: every event of a run's answer stream carries the offset it brings the stream to,
and a stream started after one yields exactly what followed it, as serve's event stream resumes from Last-Event-ID;
an offset whose text was since rewritten is withdrawn, one that is no point of the run is refused. Steps come in
order, across continue-as-new, so a consumer that resumes after any offset neither misses nor repeats an answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from stalwart.client.api import RunHandle, SessionHandle, StalwartClient
from stalwart.client.stream import (
    AnswerDelta,
    AnswerRetracted,
    ForeignOffset,
    StreamEvent,
    StreamOffset,
    digest,
)
from stalwart.contracts.agent import AgentSpec, OutputSpec, ScriptedReply, SessionSettings
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
    assert "is not an offset of run" in str(refused.value) and "from its start (no `after`)" in str(refused.value)
    assert _text(await _streamed(second)) == "the second"


def test_an_offset_reads_back_as_itself_and_anything_else_is_refused():
    for offset in (StreamOffset(3, 120, "1a2b3c4d", "5e0a77b2"), StreamOffset(7), StreamOffset(2, 4, None, "5e0a77b2")):
        assert StreamOffset.parse(str(offset)) == offset
    for text in ("5e0a77b2.4-120-9f3c02d1", "s3-0-1a2b3c4d", "s-1-0", ""):
        with pytest.raises(ValueError, match="not an offset of a run's answer stream"):
            StreamOffset.parse(text)


async def test_a_stream_resumed_inside_a_step_that_proved_no_answer_withdraws_what_it_had_yielded(
    stalwart: StalwartClient, worker: None
):
    # Step 1's JSON does not fit the agent's [output], so step 2 answers: a consumer that had step 1's first
    # characters when it stopped must be told to drop them, as a fresh stream would never have shown them.
    bad, good = '{"n": "four"}', '{"n": 4}'
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    spec = AgentSpec(
        name="typed", scripted=[ScriptedReply(text=bad), ScriptedReply(text=good)], output=OutputSpec(schema=schema)
    )
    handle = await stalwart.start(spec, "go")
    assert (await handle.result()).answer == good
    [whole] = await _streamed(handle)
    assert isinstance(whole, AnswerDelta) and whole.step == 2 and whole.offset is not None
    inside = StreamOffset(1, 6, digest(bad[:6]), whole.offset.run)
    assert await _streamed(handle, after=inside) == [AnswerRetracted(1, "", 6), AnswerDelta(2, good)]


async def test_an_offset_past_the_runs_last_step_is_refused_saying_to_stream_from_the_start(
    stalwart: StalwartClient, worker: None
):
    handle = await _finished(stalwart, ANSWER)
    [whole] = await _streamed(handle)
    assert whole.offset is not None
    with pytest.raises(ForeignOffset, match="names step 99, and the run's last step is 1.*from its start"):
        await _streamed(handle, after=StreamOffset(99, 5, digest("abcde"), whole.offset.run))


async def test_an_offset_of_another_run_is_refused_as_not_this_runs_without_calling_it_earlier(
    stalwart: StalwartClient, worker: None
):
    one, other = await _finished(stalwart, "the one"), await _finished(stalwart, "the other")
    [held] = await _streamed(one)
    with pytest.raises(ForeignOffset, match=f"is not an offset of run '{other.run_id}'") as refused:
        await _streamed(other, after=held.offset)
    assert "which has closed since" not in str(refused.value)


async def test_a_stream_resumes_after_an_offset_given_as_the_text_str_wrote(stalwart: StalwartClient, worker: None):
    handle = await _finished(stalwart, ANSWER)
    [whole] = await _streamed(handle)
    within = StreamOffset(whole.step, 8, digest(ANSWER[:8]), whole.offset.run if whole.offset else None)
    assert [e async for e in handle.stream(poll_interval=0.02, after=str(within))] == [
        AnswerDelta(whole.step, ANSWER[8:])
    ]


async def test_an_offset_of_another_type_is_refused_naming_what_after_takes(stalwart: StalwartClient, worker: None):
    handle = await _finished(stalwart, ANSWER)
    with pytest.raises(TypeError, match="after= takes a StreamOffset"):
        await _streamed(handle, after={"step": 1, "chars": 3})  # type: ignore[arg-type]


def test_an_offset_str_could_not_write_is_refused_when_made():
    for fields in ((-1,), (1, -5), (1, 4, "xyz"), (1, 4, None, "RUN"), (1, 0, "1a2b3c4d")):
        with pytest.raises(ValueError, match="StreamOffset"):
            StreamOffset(*fields)  # type: ignore[arg-type]


ANSWERS = [f"answer number {n}" for n in range(6)]


def held(events: list[StreamEvent]) -> dict[int, str]:
    """What a consumer holds of each step after `events`: deltas added, retracted characters dropped."""
    out: dict[int, str] = {}
    for event in events:
        if isinstance(event, AnswerRetracted):
            out[event.step] = out.get(event.step, "")[: max(0, len(out.get(event.step, "")) - event.chars)]
        elif isinstance(event, AnswerDelta):
            out[event.step] = out.get(event.step, "") + event.text
    return out


async def test_a_later_turns_text_comes_after_the_turns_answered_before_the_stream_started(
    stalwart: StalwartClient, worker: None, wire: WireServer, opened
):
    # The third answer is written a word every 0.2 s, so its text is pushed while the turn runs; the first two are
    # answered before the stream starts, and are only in the step log.
    script = wire.script(Reply(text=ANSWERS[0]), Reply(text=ANSWERS[1]), Reply(text=ANSWERS[2], pause=0.2))
    spec = AgentSpec(name="later", model="openai-compatible:scripted-words", base_url=script.openai_base_url)
    session = await stalwart.start_session(spec)
    opened.append(session.run_id)
    await session.send("q0")
    await session.send("q1")
    live = asyncio.create_task(_streamed(session))
    await session.send("q2")
    await session.close()
    events = await live
    steps = [e.step for e in events]
    assert steps == sorted(steps), f"steps out of order: {[(e.step, getattr(e, 'text', '')) for e in events]}"
    assert sorted(held(events).values()) == ANSWERS[:3]
    resumed = await _streamed(session, events[0].offset)
    assert sorted(held(events[:1] + resumed).values()) == ANSWERS[:3]


async def continued_session(stalwart: StalwartClient, opened: list[str]) -> SessionHandle:
    spec = AgentSpec(
        name="continued",
        scripted=[ScriptedReply(text=text) for text in ANSWERS],
        session=SessionSettings(continue_as_new_events=20),
    )
    session = await stalwart.start_session(spec)
    opened.append(session.run_id)
    return session


async def test_a_sessions_live_stream_yields_each_answer_while_the_session_continues_as_new(
    stalwart: StalwartClient, worker: None, opened
):
    session = await continued_session(stalwart, opened)  # its handle is of the chain's first run, as start gives it
    events: list[StreamEvent] = []
    stream = session.stream(poll_interval=0.02)
    for n, answer in enumerate(ANSWERS):
        await session.send(f"q{n}")
        while answer not in held(events).values():  # the answer comes while the session is open, not at its close
            events.append(await anext(stream))
    await session.close()
    events += [event async for event in stream]
    assert len(await session.histories()) >= 2, "the session did not continue as new"
    assert sorted(held(events).values()) == ANSWERS


async def test_a_closed_session_that_continued_as_new_streams_every_answer(
    stalwart: StalwartClient, worker: None, opened
):
    session = await continued_session(stalwart, opened)
    for n in range(len(ANSWERS)):
        await session.send(f"q{n}")
    await session.close()
    assert len(await session.histories()) >= 2, "the session did not continue as new"
    assert sorted(held(await _streamed(session)).values()) == ANSWERS
