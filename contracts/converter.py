"""The data converter every client and worker of Stalwart must share.

Pydantic models travel as plain JSON, so a run can also be started from the
Temporal CLI or any other SDK with a JSON input.
"""

from __future__ import annotations

import dataclasses

from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import CompositePayloadConverter, DataConverter


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


_SHARED_CONVERTERS = tuple(PydanticPayloadConverter().converters.values())
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
