"""The data converter every client and worker of Stalwart must share.

Pydantic models travel as plain JSON, so a run can also be started from the
Temporal CLI or any other SDK with a JSON input.
"""

from __future__ import annotations

import dataclasses

from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter

DATA_CONVERTER = pydantic_data_converter


def stalwart_data_converter(existing: DataConverter | None = None) -> DataConverter:
    """Stalwart's converter, keeping what an existing one adds (codec, failure converter, external storage).

    Returns `existing` itself when it already carries pydantic models, so callers can tell
    whether anything changed.
    """
    if existing is None or existing is DataConverter.default:
        return DATA_CONVERTER
    if issubclass(existing.payload_converter_class, PydanticPayloadConverter):
        return existing
    return dataclasses.replace(existing, payload_converter_class=PydanticPayloadConverter)
