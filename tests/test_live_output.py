"""What `stalwart run` prints while it follows a run: steps and streamed words, never the answer twice."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from stalwart.client.render import LiveLine
from stalwart.contracts.run import StepRecord

NOW = datetime.now(UTC)


def model_step(step: int, text: str) -> StepRecord:
    return StepRecord(step=step, role="assistant", content=text, started_at=NOW, ended_at=NOW)


def test_streamed_words_share_a_line_and_the_finished_step_is_not_repeated():
    out = io.StringIO()
    live = LiveLine(out)
    live.delta(3, "The answer ")
    live.delta(3, "is 42.")
    live.step(model_step(3, "The answer is 42."))
    assert out.getvalue().splitlines() == [
        "[3] model » The answer is 42.",
        "[3] model   (streamed above) (0.00s, 0 tokens)",
    ]


def test_stream_text_arriving_after_its_step_was_printed_is_dropped():
    out = io.StringIO()
    live = LiveLine(out)
    live.step(model_step(5, "Done."))
    live.delta(5, "Done.")
    live.close()
    assert out.getvalue().splitlines() == ["[5] model   Done. (0.00s)"]


def test_withdrawn_text_is_marked_when_a_retried_call_writes_something_else():
    """Text of a turn that calls tools never reaches the client (it is held until the turn is final); what can
    still be withdrawn is text of an attempt that failed and was retried with another answer."""
    out = io.StringIO()
    live = LiveLine(out)
    live.delta(2, "Let me check")
    live.retract(2)
    live.step(model_step(2, ""))
    assert (
        out.getvalue().splitlines()[0]
        == "[2] model » Let me check  (withdrawn: a retried model call wrote something else)"
    )
