"""How the client turns successive answer texts (attempts, retries) into what a user sees, without repeats."""

from __future__ import annotations

from datetime import UTC, datetime

from stalwart.client.stream import AnswerDelta, AnswerRetracted, ShownText, _settle
from stalwart.contracts.run import StepRecord
from stalwart.contracts.stream import StreamProgress


def test_growing_text_yields_only_what_is_new():
    shown = ShownText()
    assert shown.to(1, "The answer", settled=False) == [AnswerDelta(1, "The answer")]
    assert shown.to(1, "The answer is 395.", settled=False) == [AnswerDelta(1, " is 395.")]


def test_retried_attempt_repeating_shown_text_yields_nothing_until_it_gets_further():
    shown = ShownText()
    shown.to(1, "The answer is", settled=False)
    assert shown.to(1, "The", settled=False) == []
    assert shown.to(1, "The answer is 395.", settled=False) == [AnswerDelta(1, " 395.")]


def test_retried_attempt_writing_something_else_withdraws_the_old_text():
    shown = ShownText()
    shown.to(1, "The answer is", settled=False)
    assert shown.to(1, "It is 395.", settled=False) == [
        AnswerRetracted(1, "The answer is"),
        AnswerDelta(1, "It is 395."),
    ]


def test_settled_tool_turn_withdraws_its_text():
    shown = ShownText()
    shown.to(2, "Let me check.", settled=False)
    assert shown.to(2, "", settled=True) == [AnswerRetracted(2, "Let me check.")]


def test_a_final_step_ends_on_its_whole_answer_though_its_pushed_text_had_not_all_arrived():
    """The run was read as ended while the last pushed chunks were still on their way: the step record, which holds
    the answer, brings the text to its end (the stream used to stop short, the rest of the answer never shown)."""
    shown, settled = ShownText(), set[int]()
    shown.to(2, "word0 word1 ", settled=False)
    now = datetime.now(UTC)
    final = StepRecord(step=2, role="assistant", content="word0 word1 word2", final=True, started_at=now, ended_at=now)
    assert _settle(shown, settled, [final], live={2: StreamProgress(step=2, text="word0 word1 ")}) == [
        AnswerDelta(2, "word2")
    ]


def test_a_step_still_in_flight_is_left_to_its_attempt():
    """A record not yet final may be followed by another attempt, whose live text decides what is shown."""
    shown, settled = ShownText(), set[int]()
    shown.to(2, "Let me check.", settled=False)
    now = datetime.now(UTC)
    record = StepRecord(step=2, role="assistant", content="", started_at=now, ended_at=now)
    assert _settle(shown, settled, [record], live={2: StreamProgress(step=2, text="Let me check.")}) == []
