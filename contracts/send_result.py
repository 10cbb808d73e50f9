"""What a session's `send` update returns: the turn's result without the texts its history already holds.

A turn's message is the update's argument and its answer is the model call's result, both in history already; the
turn's `AgentResult` used to repeat each once more in `steps` (the answer twice, with `answer`), so a message and
its answer were each in a session's history about three times. Shape 2 leaves them out of `steps`: the sender's
own message step (at `message_index`) and the final step, whose text is `answer`, come with empty `content`, and
fields that hold their empty default are left out (`contracts/wire.py`). Shape 3 also leaves out `metrics`, which
says nothing the steps do not (`run_metrics` of them and `elapsed_seconds`), and was a tenth of a turn's history
at 1 KB messages. `restored` puts them all back, so a Python caller gets the `AgentResult` it always did;
docs/sessions.md says how another client reads shapes 2 and 3.
"""

from __future__ import annotations

from stalwart.contracts.run import AgentResult, ArchivedStep, StepRecord, run_metrics
from stalwart.contracts.wire import Compact

SHAPE = 3
"""The shape `send` answers with since the patch `send-result-without-metrics` (2 since `send-result-without-echoes`);
a result without `shape` is 1."""


class SendResult(AgentResult, Compact):
    """A `send` update's result, of either shape: decode one as this, then call `restored` with the message sent."""

    shape: int = 1
    """1: `steps` hold every text (sessions recorded before the change). 2: the sender's message step and the final
    step have empty `content`: read them from the message sent and from `answer`. 3: as 2, and `metrics` is left
    out: it is `run_metrics(steps, elapsed_seconds=elapsed_seconds)`."""
    message_index: int | None = None
    """Shape 2: the index in `steps` of the sender's own message step, if the turn recorded it."""
    steps: list[ArchivedStep]  # type: ignore[assignment]  # the same steps, their empty fields left out

    @classmethod
    def without_echoes(cls, result: AgentResult, own: StepRecord | None, shape: int = SHAPE) -> SendResult:
        """`result` in `shape` (2 or 3), for the sender of the message recorded as `own` (a step of `result.steps`)."""
        steps, index = [], None
        for number, step in enumerate(result.steps):
            fields = dict(step)
            if step is own:
                fields["content"], index = "", number
            elif step.final and step.content == result.answer:
                fields["content"] = ""
            steps.append(ArchivedStep.model_construct(**fields))
        fields = {**dict(result), "steps": steps, "shape": shape, "message_index": index}
        if shape >= 3:
            fields["metrics"] = None
        return cls.model_construct(**fields)

    def restored(self, message: str) -> AgentResult:
        """The turn's `AgentResult` with every text in place; `message` is the text that was sent."""
        steps = []
        for number, step in enumerate(self.steps):
            fields = dict(step)
            if self.shape >= 2 and not step.content:
                if number == self.message_index:
                    fields["content"] = message
                elif step.final:
                    fields["content"] = self.answer
            steps.append(StepRecord.model_construct(**fields))
        kept = {name: getattr(self, name) for name in AgentResult.model_fields if name != "steps"}
        if self.shape >= 3 and self.metrics is None:
            kept["metrics"] = run_metrics(steps, elapsed_seconds=self.elapsed_seconds)
        return AgentResult.model_construct(**kept, steps=steps)
