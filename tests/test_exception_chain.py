"""The exception chain is walked as Temporal records it, or on past `from None` when a diagnosis asks for it."""

from __future__ import annotations

from stalwart.activities.exception_chain import exception_chain


def _hidden_by_from_none() -> BaseException:
    try:
        try:
            raise OSError("the socket's error")
        except OSError:
            raise RuntimeError("the library's own") from None
    except RuntimeError as err:
        return err


def test_the_chain_ends_where_from_none_hides_the_error_handled():
    assert [str(e) for e in exception_chain(_hidden_by_from_none())] == ["the library's own"]


def test_a_diagnosis_walks_on_past_from_none():
    walked = [str(e) for e in exception_chain(_hidden_by_from_none(), past_from_none=True)]
    assert walked == ["the library's own", "the socket's error"]


def test_a_cause_is_followed_before_the_context_and_a_cycle_ends_the_walk():
    first, second, context = ValueError("first"), ValueError("second"), ValueError("context")
    first.__cause__, first.__context__, second.__cause__ = second, context, first
    assert [str(e) for e in exception_chain(first)] == ["first", "second"]
