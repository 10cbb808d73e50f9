"""A long answer streamed in many small deltas (`AnswerPublisher` over `secrets.RedactedStream`): the same text
reaches subscribers as ever, and each delta costs its own length, not the length of the text so far (a 129 KB
answer in words spent its model call's whole timeout comparing each delta's text with all the text before it)."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from stalwart.activities import secrets, streaming
from stalwart.activities.streaming import AnswerPublisher
from stalwart.contracts.stream import StreamChunk, StreamProgress, apply_chunk

from support.secret_values import forgetting_afterwards  # noqa: F401 - a fixture

KEY = f"PLAINKEY{uuid.uuid4().hex.upper()}"
WORDS = re.compile(r"\S+\s*|\s+")  # as the scripted model replays an answer (activities/providers/buffered.py)


def long_answer() -> list[str]:
    """128,890 characters of JSON in words, about 20,000 deltas, with the key in the middle: its start alone, then
    the whole key in three deltas."""
    numbers = json.dumps(list(range(20_000)))
    half = len(numbers) // 2
    echoed = [" ", KEY[:5], " and ", KEY[:5], KEY[5:12], KEY[12:], " "]
    return [*WORDS.findall(numbers[:half]), *echoed, *WORDS.findall(numbers[half:])]


def recording(calls: list[int], measure: Callable[..., int], function: Callable[..., Any]) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(measure(*args))
        return function(*args, **kwargs)

    return recorded


@pytest.mark.usefixtures("forgetting_afterwards")
async def test_a_long_answer_in_many_small_deltas_shows_what_redacting_all_of_it_so_far_shows():
    secrets.remember(KEY)
    deltas = long_answer()
    answer = "".join(deltas)
    pushed: list[StreamChunk] = []
    beats: list[StreamProgress] = []
    publisher = AnswerPublisher(1, beats.append, push=pushed.append, attempt=1)
    held: dict[int, StreamChunk] = {}
    written = 0
    for n, delta in enumerate(deltas):
        publisher.text(delta)
        written += len(delta)
        for chunk in pushed:
            apply_chunk(held, chunk)
        pushed.clear()
        if n % 500 == 0 or KEY[0] in delta:
            publisher.flush()
            expected = secrets.redact(answer[:written], partial_tail=True)
            assert (held[1].text, beats[-1].text) == (expected, expected), n
    publisher.flush()
    for chunk in pushed:
        apply_chunk(held, chunk)
    assert (held[1].text, beats[-1].text) == (secrets.redact(answer), secrets.redact(answer))
    assert KEY not in beats[-1].text and "[redacted]" in beats[-1].text


@pytest.mark.usefixtures("forgetting_afterwards")
async def test_a_delta_costs_its_own_length_not_the_length_of_the_text_so_far(monkeypatch: pytest.MonkeyPatch):
    """Counted, not timed: the longest text each delta redacts, searches for a secret's start or compares with
    the text before it, and how often all the text is joined into one string (only to publish it)."""
    secrets.remember(KEY)
    redacted: list[int] = []
    compared: list[int] = []
    joins: list[int] = []
    monkeypatch.setattr(secrets, "redact", recording(redacted, lambda text: len(text), secrets.redact))
    monkeypatch.setattr(secrets, "_pending", recording(redacted, lambda text: len(text), secrets._pending))
    monkeypatch.setattr(
        os.path, "commonprefix", recording(compared, lambda texts: sum(map(len, texts)), os.path.commonprefix)
    )
    shown = secrets.RedactedStream.shown
    assert isinstance(shown, property) and shown.fget is not None
    monkeypatch.setattr(secrets.RedactedStream, "shown", property(recording(joins, lambda stream: 1, shown.fget)))
    monkeypatch.setattr(streaming, "PUBLISH_EVERY_SECONDS", 3600.0)  # only the first words go out at once
    words = long_answer()
    publisher = AnswerPublisher(1, lambda progress: None, push=lambda chunk: None, attempt=1)
    for word in words:
        publisher.text(word)
    publisher.close()
    most = len(KEY) + max(map(len, words))
    assert len(words) > 20_000
    assert max(redacted) <= most
    assert max(compared, default=0) <= 2 * most
    assert len(joins) == 1, "the text is joined to be published, not at every delta"
