"""What the model activity publishes of a turn as heartbeats: new answer text, first words at once, nothing else."""

from __future__ import annotations

import asyncio

import pytest

from stalwart.activities import secrets
from stalwart.activities.streaming import PUBLISH_EVERY_SECONDS, AnswerPublisher
from stalwart.contracts.stream import StreamProgress


@pytest.fixture(autouse=True)
def no_secrets_known(monkeypatch: pytest.MonkeyPatch) -> None:
    """The publisher redacts what it publishes, holding back an ending that could start a secret: secrets earlier
    tests of this process remembered (one starting with `s`) would hold back the `s` of "The answer is"."""
    monkeypatch.setattr(secrets, "_values", frozenset())
    monkeypatch.setattr(secrets, "_by_length", ())


def publisher(*, hold: bool = False) -> tuple[AnswerPublisher, list[StreamProgress]]:
    published: list[StreamProgress] = []
    return AnswerPublisher(3, published.append, hold=hold), published


def test_the_first_words_are_published_at_once_even_right_after_an_empty_event():
    """The stream's first event (a role, no text) used to take the SDK's one unthrottled heartbeat, so the first
    words waited out the throttle (bench/first_token.py: +220 ms at the median)."""
    answer, published = publisher()
    answer.chunk()  # the role event: nothing to show
    answer.text("Hello")
    assert [p.text for p in published] == ["Hello"]


def test_events_without_new_text_publish_nothing():
    answer, published = publisher()
    answer.text("Hello")
    answer.chunk()
    answer.chunk()
    assert [p.text for p in published] == ["Hello"]


async def test_later_words_wait_for_the_publish_interval_and_go_out_together():
    answer, published = publisher()
    answer.text("Hello")
    answer.text(" there")  # within PUBLISH_EVERY_SECONDS of the first
    assert [p.text for p in published] == ["Hello"]
    answer._published_at -= PUBLISH_EVERY_SECONDS  # the interval has passed
    answer.text(", world")
    assert [p.text for p in published] == ["Hello", "Hello there, world"]
    answer.close()


async def test_words_held_by_the_interval_go_out_when_it_ends_even_if_the_model_then_pauses():
    """Not at the next keepalive (a second later): a model that pauses to think still shows what it wrote."""
    answer, published = publisher()
    answer.text("Hello")
    answer.text(" there")
    await asyncio.sleep(PUBLISH_EVERY_SECONDS * 3)
    assert [p.text for p in published] == ["Hello", "Hello there"]


async def test_nothing_is_published_once_the_turn_is_over():
    answer, published = publisher()
    answer.text("Hello")
    answer.text(" there")
    answer.close()  # the activity is returning: its result carries the text
    await asyncio.sleep(PUBLISH_EVERY_SECONDS * 3)
    assert [p.text for p in published] == ["Hello"]


def test_a_turn_that_may_call_tools_publishes_none_of_its_text():
    """Its text reaches a client with the activity's result if it turns out to be the answer (Prompty §9.3)."""
    answer, published = publisher(hold=True)
    answer.chunk()
    answer.text("Let me check")
    answer.text(" the calculator.")
    answer.tool_call()
    assert published == []


def test_text_shown_before_a_tool_call_is_retracted_at_once():
    answer, published = publisher()
    answer.text("The answer is")
    answer.tool_call()
    assert [(p.text, p.retracted) for p in published] == [("The answer is", False), ("", True)]
