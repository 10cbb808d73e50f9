"""How the client turns successive answer texts (attempts, retries) into what a user sees, without repeats."""

from __future__ import annotations

from stalwart.client.stream import AnswerDelta, AnswerRetracted, ShownText


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
