"""The data converter of every Stalwart client and worker: pydantic payloads, large ones in storage."""

from __future__ import annotations

from temporalio.converter import DataConverter

from stalwart.activities.storage.config import StorageConfig, with_external_storage
from stalwart.contracts.converter import stalwart_data_converter


def stalwart_converter(existing: DataConverter | None = None, storage: StorageConfig | None = None) -> DataConverter:
    """Stalwart's converter, keeping what `existing` adds (codec, failure converter, its own storage).

    Returns `existing` itself when it already has both, so callers can tell whether anything changed.
    Storage defaults to the environment's `STALWART_STORAGE` settings.
    """
    converter = stalwart_data_converter(existing)
    if converter.external_storage is None:
        converter = with_external_storage(converter, storage)
    return converter
