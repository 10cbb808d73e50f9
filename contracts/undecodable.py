"""A payload the encryption codec could not open, kept as a marker that says why instead of an error.

The SDK runs every payload of a workflow activation through the codec before any handler runs: a codec that
raised for one payload (a signal sealed with a key the worker lacks, or garbled on the way) failed every workflow
task of the run, and a session was wedged until terminated. The codec hands this marker on instead, and what reads
it decides: the data converter raises `EncryptionKeyError` with the reason (an activity result, a workflow input
or a query argument still fails its task, so a worker that has the key can take it), while the session's signal
and update handlers check for it first (`workflows/arguments.py`): a signal becomes a note, an update is refused.

The marker holds only the reason: never key material, nor the sealed bytes.
"""

from __future__ import annotations

from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import EncodingPayloadConverter

from stalwart.contracts.errors import EncryptionKeyError

ENCODING = b"binary/stalwart-undecodable"
SHOWN = "<undecodable payload: {reason}>"
"""How a reader (the CLI, the codec server for the Web UI) shows a marker: the CLI's placeholder for any value it
cannot decode."""


def marker(reason: str) -> Payload:
    """The payload standing for one that cannot be opened, and why."""
    return Payload(metadata={"encoding": ENCODING}, data=reason.encode("utf-8", errors="backslashreplace"))


def reason(payload: Payload) -> str | None:
    """Why `payload` could not be opened, if it is a marker; None for any other payload."""
    if payload.metadata.get("encoding") != ENCODING:
        return None
    return payload.data.decode("utf-8", errors="backslashreplace") or "the payload could not be opened"


class UndecodablePayloads(EncodingPayloadConverter):
    """The data converter's reading of a marker: `EncryptionKeyError` with its reason. It encodes nothing."""

    @property
    def encoding(self) -> str:
        return ENCODING.decode()

    def to_payload(self, value: Any) -> Payload | None:
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        raise EncryptionKeyError(reason(payload))
