"""Offsets of a run's events, read from the run itself: a subscriber that comes back with the last one it saw is
sent exactly what followed it, and text a retried attempt withdraws is marked so, never sent twice."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stalwart.client.serve.feed import Offset, Snapshot, _Subscriber
from stalwart.contracts.run import StepRecord
from stalwart.contracts.stream import StreamProgress

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _user(text: str) -> StepRecord:
    return StepRecord(step=0, role="user", content=text, started_at=NOW, ended_at=NOW)


def _turn(step: int, text: str = "", *, ended: bool = False, final: bool = False) -> StepRecord:
    return StepRecord(
        step=step, role="assistant", content=text, started_at=NOW, ended_at=NOW if ended else None, final=final
    )


def _snapshot(*steps: StepRecord, live: str | None = None, retracted: bool = False) -> Snapshot:
    progress = {1: StreamProgress(step=1, text=live or "", retracted=retracted)} if live is not None else {}
    return Snapshot(list(steps), progress, None, [], closed=False)


def _logged(subscriber: _Subscriber, snapshot: Snapshot) -> list[tuple[str, str, object]]:
    return [
        (str(offset), event.kind, event.data.get("text", event.data.get("chars", event.data.get("index"))))
        for offset, event in subscriber.events(snapshot)
        if event.kind in ("step", "delta", "retract")
    ]


def test_an_offset_reads_back_as_itself_and_anything_else_is_refused():
    assert Offset.parse(str(Offset(12, 340))) == Offset(12, 340)
    for wrong in ("", "12", "12-", "-3", "a-b", "1-2-3"):
        with pytest.raises(ValueError):
            Offset.parse(wrong)


def test_each_finished_record_moves_the_offset_past_it_and_text_moves_it_by_its_characters():
    subscriber = _Subscriber("r", Offset(), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The ans")) == [
        ("1-0", "step", 0),
        ("1-7", "delta", "The ans"),
    ]
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The answer.")) == [("1-11", "delta", "wer.")]
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1, "The answer.", ended=True, final=True))) == [
        ("2-0", "step", 1)
    ]


def test_a_subscriber_back_from_an_offset_mid_answer_is_sent_the_rest_of_the_text_only():
    subscriber = _Subscriber("r", Offset(1, 7), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The answer.")) == [("1-11", "delta", "wer.")]


def test_a_subscriber_back_after_the_answer_ended_is_sent_its_last_words_then_its_record():
    subscriber = _Subscriber("r", Offset(1, 7), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1, "The answer.", ended=True, final=True))) == [
        ("1-11", "delta", "wer."),
        ("2-0", "step", 1),
    ]


def test_a_subscriber_back_while_a_retry_catches_up_is_sent_nothing_until_it_writes_past_the_offset():
    subscriber = _Subscriber("r", Offset(1, 7), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The")) == []
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The answer")) == [("1-10", "delta", "wer")]


def test_text_a_retry_writes_differently_is_withdrawn_then_sent_anew():
    subscriber = _Subscriber("r", Offset(), "ui")
    subscriber.events(_snapshot(_user("hi"), _turn(1), live="The answer is"))
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="It is 395.")) == [
        ("1-0", "retract", 13),
        ("1-10", "delta", "It is 395."),
    ]


def test_text_of_a_turn_that_went_on_to_call_a_tool_is_withdrawn():
    subscriber = _Subscriber("r", Offset(), "ui")
    subscriber.events(_snapshot(_user("hi"), _turn(1), live="Let me check"))
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1, "Let me check", ended=True))) == [
        ("1-0", "retract", 12),
        ("2-0", "step", 1),
    ]


def test_two_subscribers_at_the_same_point_of_the_run_hold_the_same_offset():
    early, late = _Subscriber("r", Offset(), "ui"), _Subscriber("r", Offset(), "ui")
    early.events(_snapshot(_user("hi"), _turn(1), live="The"))
    early.events(_snapshot(_user("hi"), _turn(1), live="The answer"))
    late.events(_snapshot(_user("hi"), _turn(1), live="The answer"))
    assert early.at == late.at == Offset(1, 10)
