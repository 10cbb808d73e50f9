"""How pushed chunks build a run's turns in flight, and how a worker's identity names its broker."""

from __future__ import annotations

from stalwart.contracts.stream import StreamChunk, apply_chunk, broker_address


def test_deltas_of_one_attempt_add_up_to_its_text():
    turns: dict[int, StreamChunk] = {}
    apply_chunk(turns, StreamChunk(step=2, at=0, text="Hello "))
    apply_chunk(turns, StreamChunk(step=2, at=6, text="world"))
    assert turns[2].text == "Hello world"


def test_a_newer_attempt_starts_its_text_anew_and_an_older_one_is_ignored():
    turns: dict[int, StreamChunk] = {}
    apply_chunk(turns, StreamChunk(step=2, attempt=1, text="first try"))
    apply_chunk(turns, StreamChunk(step=2, attempt=2, text="second"))
    apply_chunk(turns, StreamChunk(step=2, attempt=1, at=9, text=" late"))
    assert (turns[2].attempt, turns[2].text) == (2, "second")


def test_a_retraction_empties_the_step_and_an_ending_removes_it():
    turns: dict[int, StreamChunk] = {}
    apply_chunk(turns, StreamChunk(step=4, text="Let me check"))
    apply_chunk(turns, StreamChunk(step=4, retracted=True))
    assert (turns[4].text, turns[4].retracted) == ("", True)
    apply_chunk(turns, StreamChunk(step=4, ended=True))
    assert turns == {}


def test_a_worker_identity_names_its_broker_and_an_older_workers_names_none():
    assert broker_address("1234@host stream=127.0.0.1:40123") == "127.0.0.1:40123"
    assert broker_address("1234@host stream=[::1]:40123") == "[::1]:40123"
    assert broker_address("1234@host") is None
