"""Offsets of a run's events, read from the run itself: a subscriber that comes back with the last one it saw is
sent exactly what followed it, and text a retried attempt withdraws is marked so, never sent twice. An offset
carries a digest of the text delivered, so a subscriber back after a retry that wrote other words gets them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stalwart.client.serve.feed import FeedEvent, Offset, Snapshot, _Subscriber, digest, run_tag
from stalwart.contracts.messages import Usage
from stalwart.contracts.run import RunState, StepRecord
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


def _id(records: int, text: str = "") -> str:
    """The offset of a point where `text` is what was delivered of record `records`."""
    return f"{records}-{len(text)}-{digest(text)}" if text else f"{records}-0"


def _after(records: int, text: str) -> Offset:
    """What a subscriber that holds `text` of record `records` sends back."""
    return Offset.parse(_id(records, text))


def _rebuilt(held: str, events: list[tuple[Offset, FeedEvent]]) -> str:
    """A client's text once it applies `events` to the `held` text it had: deltas added, retracts remove."""
    for _, event in events:
        if event.kind == "delta":
            held += event.data["text"]
        elif event.kind == "retract":
            held = held[: max(0, len(held) - event.data["chars"])]
    return held


def _logged(subscriber: _Subscriber, snapshot: Snapshot) -> list[tuple[str, str, object]]:
    return [
        (str(offset), event.kind, event.data.get("text", event.data.get("chars", event.data.get("index"))))
        for offset, event in subscriber.events(snapshot)
        if event.kind in ("step", "delta", "retract")
    ]


def _read(*steps: StepRecord, chain: str = run_tag("first-run-id"), closed: bool = False) -> Snapshot:
    """A snapshot as a watcher reads it from Temporal: the run's tag, and its state with the step log."""
    state = RunState(agent="a", goal="hi", status="done" if closed else "running", steps=list(steps), usage=Usage())
    return Snapshot(list(steps), {}, state, [], closed=closed, chain=chain)


def test_an_offset_reads_back_as_itself_and_anything_else_is_refused():
    assert Offset.parse(str(Offset(12, 340, "1a2b3c4d"))) == Offset(12, 340, "1a2b3c4d")
    assert Offset.parse(str(Offset(12, 0))) == Offset(12, 0)
    assert Offset.parse(str(Offset(12, 340, "1a2b3c4d", "5e0a77b2"))) == Offset(12, 340, "1a2b3c4d", "5e0a77b2")
    assert Offset.parse("5e0a77b2.4-0") == Offset(4, 0, None, "5e0a77b2")
    wrongs = ("", "12", "12-", "-3", "a-b", "1-2-3", "1-2-1A2B3C4D", "1-2-1a2b3c4", "1-0-1a2b3c4d", "1-2-3-4")
    for wrong in (*wrongs, "5e0a77b2.", "5e0a77b.1-0", "5e0a77b2-1-0", ".1-0", "5E0A77B2.1-0"):
        with pytest.raises(ValueError, match="run.records-characters-digest"):
            Offset.parse(wrong)


def test_every_offset_names_the_run_it_is_a_point_of():
    subscriber = _Subscriber("r", Offset(), "ui")
    events = subscriber.events(_read(_user("hi"), _turn(1, "Hello.", ended=True, final=True)))
    assert {offset.run for offset, _ in events} == {run_tag("first-run-id")}
    assert [str(o) for o, e in events if e.kind == "step"] == [
        f"{run_tag('first-run-id')}.1-0",
        f"{run_tag('first-run-id')}.2-0",
    ]


def test_an_offset_past_the_end_of_the_log_resets_the_subscriber_then_sends_the_run_from_its_start():
    subscriber = _Subscriber("r", Offset(999, 0), "ui")
    events = subscriber.events(_read(_user("hi"), _turn(1, "Hello.", ended=True, final=True), closed=True))
    assert [(str(o).split(".")[-1], e.kind) for o, e in events if e.kind in ("reset", "step", "end")] == [
        ("0-0", "reset"),
        ("1-0", "step"),
        ("2-0", "step"),
        ("2-0", "end"),
    ]
    [reset] = [e for _, e in events if e.kind == "reset"]
    assert reset.data["offset"] == "999-0" and "past the end" in reset.data["reason"]


def test_an_offset_into_the_text_of_a_record_the_log_has_not_reached_resets_the_subscriber():
    subscriber = _Subscriber("r", _after(1, "The ans"), "ui")
    assert [e.kind for _, e in subscriber.events(_read(_user("hi")))][:2] == ["reset", "step"]


def test_an_offset_of_an_earlier_run_of_the_same_id_resets_the_subscriber_even_within_the_log():
    earlier = Offset(1, 0, None, run_tag("an-earlier-run-id"))
    subscriber = _Subscriber("r", earlier, "ui")
    events = subscriber.events(_read(_user("hi"), _turn(1, "Hello.", ended=True, final=True)))
    assert [(e.kind, e.data.get("index")) for _, e in events if e.kind in ("reset", "step")] == [
        ("reset", None),
        ("step", 0),
        ("step", 1),
    ]
    assert "earlier run" in events[0][1].data["reason"]


def test_an_offset_of_this_run_within_its_log_resumes_without_a_reset():
    subscriber = _Subscriber("r", Offset(1, 0, None, run_tag("first-run-id")), "ui")
    events = subscriber.events(_read(_user("hi"), _turn(1, "Hello.", ended=True, final=True)))
    assert [(e.kind, e.data.get("index")) for _, e in events if e.kind in ("reset", "step")] == [("step", 1)]


def test_an_offset_is_not_judged_on_a_run_that_could_not_be_read():
    subscriber = _Subscriber("r", Offset(5, 0, None, run_tag("an-earlier-run-id")), "ui")
    unread = Snapshot([], {}, None, [], closed=False, error="cannot read run r: unavailable")
    assert [e.kind for _, e in subscriber.events(unread)] == ["state", "approvals"]
    assert subscriber.at == Offset(5, 0)


def test_an_offset_without_a_digest_is_still_read_as_older_clients_send_it():
    assert Offset.parse("12-340") == Offset(12, 340, None)


def test_the_digest_is_the_crc32_of_the_text_delivered_in_utf8_in_eight_hex_digits():
    subscriber = _Subscriber("r", Offset(), "ui")
    subscriber.events(_snapshot(_user("hi"), _turn(1), live="The ans"))
    assert str(subscriber.at) == "1-7-24d60f56"


def test_each_finished_record_moves_the_offset_past_it_and_text_moves_it_by_its_characters():
    subscriber = _Subscriber("r", Offset(), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The ans")) == [
        ("1-0", "step", 0),
        (_id(1, "The ans"), "delta", "The ans"),
    ]
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The answer.")) == [
        (_id(1, "The answer."), "delta", "wer.")
    ]
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1, "The answer.", ended=True, final=True))) == [
        ("2-0", "step", 1)
    ]


def test_a_subscriber_back_from_an_offset_mid_answer_is_sent_the_rest_of_the_text_only():
    subscriber = _Subscriber("r", _after(1, "The ans"), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The answer.")) == [
        (_id(1, "The answer."), "delta", "wer.")
    ]


def test_a_subscriber_back_after_the_answer_ended_is_sent_its_last_words_then_its_record():
    subscriber = _Subscriber("r", _after(1, "The ans"), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1, "The answer.", ended=True, final=True))) == [
        (_id(1, "The answer."), "delta", "wer."),
        ("2-0", "step", 1),
    ]


def test_a_subscriber_back_after_a_retry_wrote_other_words_has_its_text_withdrawn_then_the_answer_sent():
    first, answer = "The first attempt says", "A second attempt explains the sky."
    subscriber = _Subscriber("r", _after(1, first[:13]), "ui")
    events = subscriber.events(_snapshot(_user("hi"), _turn(1, answer, ended=True, final=True)))
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1, answer, ended=True, final=True))) == []
    assert [(str(o), e.kind) for o, e in events if e.kind in ("delta", "retract", "step")] == [
        ("1-0", "retract"),
        (_id(1, answer), "delta"),
        ("2-0", "step"),
    ]
    assert _rebuilt(first[:13], events) == answer


def test_a_subscriber_back_while_a_retry_writes_other_words_has_its_text_withdrawn_then_the_new_words_sent():
    subscriber = _Subscriber("r", _after(1, "The first att"), "ui")
    events = subscriber.events(_snapshot(_user("hi"), _turn(1), live="A second attempt"))
    assert _rebuilt("The first att", events) == "A second attempt"
    assert subscriber.at == _after(1, "A second attempt")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="A second attempt explains")) == [
        (_id(1, "A second attempt explains"), "delta", " explains")
    ]


def test_a_subscriber_back_while_a_retry_catches_up_is_sent_nothing_until_it_writes_past_the_offset():
    subscriber = _Subscriber("r", _after(1, "The ans"), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The")) == []
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="The answer")) == [
        (_id(1, "The answer"), "delta", "wer")
    ]


def test_a_subscriber_back_with_an_offset_without_digest_is_taken_to_hold_the_start_of_the_text_now_written():
    subscriber = _Subscriber("r", Offset(1, 7), "ui")
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="It is 395.")) == [
        (_id(1, "It is 395."), "delta", "95.")
    ]


def test_text_a_retry_writes_differently_is_withdrawn_then_sent_anew():
    subscriber = _Subscriber("r", Offset(), "ui")
    subscriber.events(_snapshot(_user("hi"), _turn(1), live="The answer is"))
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="It is 395.")) == [
        ("1-0", "retract", 13),
        (_id(1, "It is 395."), "delta", "It is 395."),
    ]


def test_a_retraction_counts_unicode_code_points_as_offsets_do():
    subscriber = _Subscriber("r", Offset(), "ui")
    subscriber.events(_snapshot(_user("hi"), _turn(1), live="🌍🌍 alpha"))
    assert subscriber.at.chars == 8
    assert _logged(subscriber, _snapshot(_user("hi"), _turn(1), live="Plain")) == [
        ("1-0", "retract", 8),
        (_id(1, "Plain"), "delta", "Plain"),
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
    assert early.at == late.at == _after(1, "The answer")


def test_offsets_are_ordered_by_where_they_are_in_the_run_whatever_run_they_name():
    tag = run_tag("first-run-id")
    assert sorted([Offset(2, 0, None, tag), Offset(1, 5, "1a2b3c4d", tag), Offset(1, 0)]) == [
        Offset(1, 0),
        Offset(1, 5, "1a2b3c4d", tag),
        Offset(2, 0, None, tag),
    ]
