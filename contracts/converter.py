"""The data converter every client and worker of Stalwart must share.

Pydantic models travel as plain JSON, so a run can also be started from the
Temporal CLI or any other SDK with a JSON input.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import CompositePayloadConverter, DataConverter, EncodingPayloadConverter

from stalwart.contracts.errors import MissingEncryptionKey
from stalwart.contracts.undecodable import UndecodablePayloads


class SharedPydanticPayloadConverter(PydanticPayloadConverter):
    """The SDK's pydantic payload converter, every instance sharing one JSON converter and its cached TypeAdapters.

    With external storage on (as every Stalwart worker and client has it), the SDK builds its data converter, and
    with it a new instance of this class, for each payload it stores or reads (`DataConverter._with_store_context`
    in temporalio 1.35). A new `PydanticPayloadConverter` builds a serializer and starts with an empty TypeAdapter
    cache, so each payload paid for both: 34 µs to decode a model turn instead of 8 µs, on the worker's event loop.
    """

    def __init__(self) -> None:
        # Not PydanticPayloadConverter.__init__: that builds the JSON converter, which this class shares instead.
        CompositePayloadConverter.__init__(self, *_SHARED_CONVERTERS)


class _SealedPayloads(EncodingPayloadConverter):
    """Payloads the encryption codec would have opened, met by a process that has no key: said as such.

    Without it the SDK raises `KeyError('Unknown payload encoding binary/encrypted')`, which names no fix. It encodes
    nothing: every value is JSON, written by the converters before it."""

    @property
    def encoding(self) -> str:
        return "binary/encrypted"  # activities/storage/encryption.py's ENCODING

    def to_payload(self, value: Any) -> Payload | None:
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        raise MissingEncryptionKey(
            "the run's payloads are encrypted and no encryption key is set here: set STALWART_ENCRYPTION_KEYS (or "
            "STALWART_ENCRYPTION_KEY_FILE) to the workers' keys"
        )


_SHARED_CONVERTERS = (*PydanticPayloadConverter().converters.values(), _SealedPayloads(), UndecodablePayloads())
"""The encoding converters of every `SharedPydanticPayloadConverter`; all are stateless but the JSON one, whose
state is a thread-safe cache."""

DATA_CONVERTER = DataConverter(payload_converter_class=SharedPydanticPayloadConverter)


def stalwart_data_converter(existing: DataConverter | None = None) -> DataConverter:
    """Stalwart's converter, keeping what an existing one adds (codec, failure converter, external storage).

    Returns `existing` itself when it already carries pydantic models, so callers can tell
    whether anything changed.
    """
    if existing is None or existing is DataConverter.default:
        return DATA_CONVERTER
    if issubclass(existing.payload_converter_class, PydanticPayloadConverter):
        return existing
    return dataclasses.replace(existing, payload_converter_class=SharedPydanticPayloadConverter)
