"""Failures that fit: an activity's error reaches the workflow with its cause readable, however long it was.

Temporal keeps the failure of an attempt that will be retried in the run's state, where it allows about
4 KB; a longer one (a long message, the stack traces of a cause chain) is replaced by the bare
`Failure exceeds size limit.`, and the cause is lost. So every failure Stalwart's converter writes is
fitted to a budget well under that: stack traces go first, then messages are shortened, each keeping its
beginning (where the cause is named) and saying how much was cut. Failures that already fit are untouched.
"""

from __future__ import annotations

from temporalio.api.failure.v1 import Failure
from temporalio.converter import DefaultFailureConverter, PayloadConverter

FAILURE_BUDGET_BYTES = 2048
"""What one failure, with its whole cause chain, may take; Temporal drops a retried attempt's over ~4 KB."""
_TOP_MESSAGE_CHARS = 1000
_CAUSE_MESSAGE_CHARS = 300


def fit(failure: Failure, budget: int = FAILURE_BUDGET_BYTES) -> None:
    """Shrink `failure` in place until it fits `budget` bytes: stack traces, then messages (heads kept)."""
    if failure.ByteSize() <= budget:
        return
    chain = _chain(failure)
    for level in chain:
        level.stack_trace = ""
    if failure.ByteSize() <= budget:
        return
    for depth, level in enumerate(chain):
        level.message = _shortened(level.message, _TOP_MESSAGE_CHARS if depth == 0 else _CAUSE_MESSAGE_CHARS)
    while failure.ByteSize() > budget and len(chain) > 2:  # drop middle links; the top and the root cause stay
        chain[-3].cause.CopyFrom(chain[-1])
        chain = _chain(failure)


def _chain(failure: Failure) -> list[Failure]:
    chain = [failure]
    while chain[-1].HasField("cause"):
        chain.append(chain[-1].cause)
    return chain


def _shortened(message: str, limit: int) -> str:
    if len(message) <= limit:
        return message
    return f"{message[:limit]} … [{len(message) - limit} more characters cut to fit Temporal's failure size limit]"


class FittedFailureConverter(DefaultFailureConverter):
    """The default failure converter, with every failure fitted to `FAILURE_BUDGET_BYTES`."""

    def __init__(self, *, encode_common_attributes: bool = False) -> None:
        super().__init__(encode_common_attributes=encode_common_attributes)

    def to_failure(self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure) -> None:
        encode, self._encode_common_attributes = self._encode_common_attributes, False
        try:
            super().to_failure(exception, payload_converter, failure)
        finally:
            self._encode_common_attributes = encode
        fit(failure)
        if encode:  # as the SDK's converter with encoded attributes does, at every level, after fitting
            for level in _chain(failure):
                if level.message == "Encoded failure" and level.HasField("encoded_attributes"):
                    continue
                level.encoded_attributes.CopyFrom(
                    payload_converter.to_payloads([{"message": level.message, "stack_trace": level.stack_trace}])[0]
                )
                level.message = "Encoded failure"
                level.stack_trace = ""


class FittedFailureConverterWithEncodedAttributes(FittedFailureConverter):
    """`FittedFailureConverter` moving message and stack trace into an (encrypted) payload, like the SDK's own."""

    def __init__(self) -> None:
        super().__init__(encode_common_attributes=True)
