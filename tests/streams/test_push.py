"""Answer text pushed from the worker as the model writes it (issue 44, item 1): chunks come by push, not by
polling; a subscriber resumes from its offset; retries, worker restarts and continue-as-new lose nothing and
repeat nothing; subscribers share one upstream subscription."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client

from stalwart.client.api import StalwartClient
from stalwart.client.push import PushSource
from stalwart.client.serve.feed import FeedEvent, Offset, PushFeed
from stalwart.client.stream import AnswerDelta, AnswerRetracted, StreamEvent, stream_answer
from stalwart.contracts.agent import AgentSpec, SessionSettings
from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.run import AgentResult

from wire_server.script import Cut, Freeze, Reply
from wire_server.server import Script, WireServer

pytestmark = pytest.mark.slow

KEY = "sk-test-streams-0123456789"
KEY_ENV = "STALWART_TEST_STREAMS_KEY"
ANSWER = "one two three four five six seven eight nine ten"
"""Words the wire server streams one event each; `Freeze(events=4)` stops after the role event and three words."""


@pytest.fixture(autouse=True)
def model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def agent(script: Script, **fields: Any) -> AgentSpec:
    return AgentSpec(
        name="pushed", model="openai:gpt-4.1-mini", base_url=script.openai_base_url, api_key_env=KEY_ENV, **fields
    )


async def start(stalwart: StalwartClient, spec: AgentSpec, opened: list[str]) -> str:
    handle = await stalwart.start(spec, "talk")
    opened.append(handle.run_id)
    return handle.run_id


def frozen(wire: WireServer, *after: Reply | Cut | Freeze) -> Script:
    """A model that writes `one two three ` then says nothing more for ten minutes (then `after`, if retried)."""
    return wire.script(Freeze(Reply(text=ANSWER, pause=0.05), events=4, seconds=600), *after)


class CountedDescribes:
    """A workflow handle whose describe calls are counted: each is one poll of the server."""

    def __init__(self, temporal: Client, run_id: str) -> None:
        self.handle = temporal.get_workflow_handle(run_id, result_type=AgentResult)
        self.describes = 0
        describe = self.handle.describe

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.describes += 1
            return await describe(*args, **kwargs)

        self.handle.describe = counted  # type: ignore[method-assign]


async def until_the_model_call_runs(temporal: Client, run_id: str) -> None:
    """Wait until a worker has started the run's model call (a worker just started may not be listed yet as one
    polling the queue, so a stream that polls once could otherwise not find its broker)."""
    handle = temporal.get_workflow_handle(run_id)
    while not any(
        p.activity_type.name == MODEL_ACTIVITY and p.last_worker_identity
        for p in (await handle.describe()).raw_description.pending_activities
    ):
        await asyncio.sleep(0.02)


async def deltas_until(feed_events: Any, text: str, index: int | None = None) -> list[tuple[Offset, FeedEvent]]:
    """Feed events until the delta text (of record `index`, if given) reaches `text`."""
    seen: list[tuple[Offset, FeedEvent]] = []
    async for offset, event in feed_events:
        seen.append((offset, event))
        written = "".join(
            e.data["text"] for _, e in seen if e.kind == "delta" and (index is None or e.data["index"] == index)
        )
        if written == text:
            return seen
    raise AssertionError(f"the feed ended before its text reached {text!r}: {seen}")


async def test_chunks_reach_a_stream_by_push_with_no_poll_between_them(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened
):
    async with new_worker():
        run_id = await start(stalwart_client, agent(frozen(wire)), opened)
        # Polled once from here on: the model call must already run where the first poll can see its worker.
        await until_the_model_call_runs(stalwart_client.temporal, run_id)
        counted = CountedDescribes(stalwart_client.temporal, run_id)
        sources: list[PushSource] = []
        events = stream_answer(counted.handle, poll_interval=3600, on_push=sources.append)
        deltas: list[str] = []
        async for event in events:
            assert isinstance(event, AnswerDelta), event
            deltas.append(event.text)
            if "".join(deltas) == "one two three ":
                break
        await events.aclose()
    assert counted.describes == 1, "the text came by polling the server, not by push"
    assert sources[0].chunks >= len(deltas)


async def test_a_hundred_subscribers_of_a_run_cost_the_worker_one_subscription(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened
):
    feed = PushFeed(stalwart_client)
    async with new_worker() as plugin:
        run_id = await start(stalwart_client, agent(frozen(wire)), opened)
        subscribers = [feed.events(run_id, Offset()) for _ in range(100)]
        seen = await asyncio.gather(*(deltas_until(events, "one two three ") for events in subscribers))
        subscriptions = plugin.stream_broker.subscriptions
        source = feed.source(run_id)
        await feed.close()
    assert all("".join(e.data["text"] for _, e in s if e.kind == "delta") == "one two three " for s in seen)
    assert subscriptions == 1
    assert source is not None and source.chunks >= 1


async def test_a_subscriber_back_from_its_last_offset_gets_exactly_the_text_it_missed(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened
):
    feed = PushFeed(stalwart_client)
    async with new_worker():
        run_id = await start(stalwart_client, agent(wire.script(Reply(text=ANSWER, pause=0.05))), opened)
        first = feed.events(run_id, Offset())
        before: list[tuple[Offset, FeedEvent]] = []
        async for offset, event in first:
            before.append((offset, event))
            if event.kind == "delta":
                break  # the subscriber goes away after its first words
        await first.aclose()
        last = before[-1][0]
        rest = [item async for item in feed.events(run_id, last)]
        await feed.close()
    index = before[-1][1].data["index"]
    said_before = "".join(e.data["text"] for _, e in before if e.kind == "delta")
    said_after = "".join(e.data["text"] for _, e in rest if e.kind == "delta" and e.data["index"] == index)
    assert said_before + said_after == ANSWER
    assert not [e for _, e in rest if e.kind == "retract"]
    assert rest[-1][1].kind == "end"


async def test_text_a_retried_model_call_withdraws_is_marked_withdrawn_and_never_sent_twice(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened
):
    script = wire.script(Cut(Reply(text="alpha beta gamma delta"), events=3), Reply(text="omega psi"))
    async with new_worker():
        run_id = await start(stalwart_client, agent(script), opened)
        sources: list[PushSource] = []
        events: list[StreamEvent] = [
            e
            async for e in stream_answer(
                stalwart_client.temporal.get_workflow_handle(run_id, result_type=AgentResult), on_push=sources.append
            )
        ]
    # The first attempt's words come in as many deltas as the stream had looked by then ("alpha beta " in one, under
    # load): all of them are withdrawn at once, and the retry's words follow.
    [withdrawn] = [n for n, e in enumerate(events) if isinstance(e, AnswerRetracted)]
    before, after = events[:withdrawn], events[withdrawn + 1 :]
    assert all(isinstance(e, AnswerDelta) for e in before + after)
    assert "".join(e.text for e in before) == events[withdrawn].text
    assert events[withdrawn].text in ("alpha ", "alpha beta ")
    assert "".join(e.text for e in after) == "omega psi"
    assert sources[0].chunks > 0


async def test_a_stream_resumes_on_the_worker_that_retries_the_call_after_the_first_stopped(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened
):
    feed = PushFeed(stalwart_client)
    script = frozen(wire, Reply(text=ANSWER, pause=0.01))
    async with new_worker() as first:
        run_id = await start(stalwart_client, agent(script), opened)
        events = feed.events(run_id, Offset())
        seen = await deltas_until(events, "one two three ")
        first_broker = first.stream_broker.address
    # The first worker stopped mid-answer; the call is retried on the next one, which pushes from its own broker.
    async with new_worker() as second:
        seen += [item async for item in events]
        second_broker = second.stream_broker.address
    await feed.close()
    deltas = "".join(e.data["text"] for _, e in seen if e.kind == "delta")
    assert deltas == ANSWER, "the retried call's words were sent once, after those the first worker sent"
    assert not [e for _, e in seen if e.kind == "retract"]
    assert first_broker != second_broker
    assert seen[-1][1].kind == "end" and seen[-1][1].data["answer"] == ANSWER


async def test_offsets_keep_increasing_across_continue_as_new_and_each_answer_is_pushed(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened
):
    answers = [f"answer number {n} in words" for n in range(6)]
    # Half a second an answer: the feed subscribes to the worker's broker when it sees a model call in flight (it
    # reads the run every 100 ms), so answers quicker than its reads came by heartbeat alone on a loaded machine.
    script = wire.script(*(Reply(text=text, pause=0.1) for text in answers))
    spec = agent(script, session=SessionSettings(continue_as_new_events=20))
    feed = PushFeed(stalwart_client)
    async with new_worker():
        session = await stalwart_client.start_session(spec)
        opened.append(session.run_id)
        events = feed.events(session.run_id, Offset())
        seen: list[tuple[Offset, FeedEvent]] = []
        for n, text in enumerate(answers):
            await session.post(f"q{n}")
            async for offset, event in events:
                seen.append((offset, event))
                if event.kind == "step" and event.data["record"]["content"] == text:
                    break
        source = feed.source(session.run_id)
        histories = await stalwart_client.get(session.run_id).histories()
        await feed.close()
    assert len(histories) >= 2, "the session did not continue as new"
    logged = [o for o, e in seen if e.kind in ("step", "delta", "retract")]
    assert logged == sorted(logged), "an offset went back"
    steps = [e.data["record"]["content"] for _, e in seen if e.kind == "step"]
    assert steps == [text for n, answer in enumerate(answers) for text in (f"q{n}", answer)]
    for answer in answers:
        assert answer in "".join(e.data["text"] for _, e in seen if e.kind == "delta")
    assert source is not None and source.chunks > 0


async def test_a_worker_without_the_push_channel_is_followed_by_polling(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STALWART_STREAM", "off")  # as a worker of an older release runs: no broker to find
    async with new_worker() as plugin:
        run_id = await start(stalwart_client, agent(wire.script(Reply(text=ANSWER, pause=0.01))), opened)
        sources: list[PushSource] = []
        handle = stalwart_client.temporal.get_workflow_handle(run_id, result_type=AgentResult)
        events = [e async for e in stream_answer(handle, on_push=sources.append)]
    assert plugin.stream_broker is None
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == ANSWER
    assert sources[0].chunks == 0
