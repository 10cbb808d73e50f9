"""The data converter of every Stalwart client and worker: pydantic payloads, large ones in storage, encrypted."""

from __future__ import annotations

import dataclasses

from temporalio.converter import (
    DataConverter,
    DefaultFailureConverter,
    DefaultFailureConverterWithEncodedAttributes,
    FailureConverter,
)

from stalwart.activities.storage.config import StorageConfig, with_external_storage
from stalwart.activities.storage.encryption import ChainedCodec, EncryptionCodec, Keyring, encryption_codec
from stalwart.activities.storage.failures import FittedFailureConverter, FittedFailureConverterWithEncodedAttributes
from stalwart.contracts.converter import stalwart_data_converter


def stalwart_converter(
    existing: DataConverter | None = None,
    storage: StorageConfig | None = None,
    encryption: Keyring | None = None,
) -> DataConverter:
    """Stalwart's converter, keeping what `existing` adds (codec, failure converter, its own storage).

    Returns `existing` itself when it already has all of it, so callers can tell whether anything changed.
    Storage defaults to the environment's `STALWART_STORAGE` settings, encryption to its
    `STALWART_ENCRYPTION_KEYS` (or `STALWART_ENCRYPTION_KEY_FILE`): off when neither is set.
    """
    converter = stalwart_data_converter(existing)
    if converter.external_storage is None:
        converter = with_external_storage(converter, storage)
    keyring = encryption if encryption is not None else Keyring.from_env()
    if keyring is not None:
        converter = with_encryption(converter, keyring)
    return with_fitted_failures(converter)


def with_fitted_failures(converter: DataConverter) -> DataConverter:
    """`converter` writing failures that fit Temporal's size limit (see `storage/failures.py`), unless it has a
    failure converter of its own. Returns `converter` itself when nothing changes."""
    replacements: dict[type[FailureConverter], type[FailureConverter]] = {
        DefaultFailureConverter: FittedFailureConverter,
        DefaultFailureConverterWithEncodedAttributes: FittedFailureConverterWithEncodedAttributes,
    }
    fitted = replacements.get(converter.failure_converter_class)
    return converter if fitted is None else dataclasses.replace(converter, failure_converter_class=fitted)


def with_encryption(converter: DataConverter, keyring: Keyring) -> DataConverter:
    """`converter` with AES-256-GCM payloads, after any codec of its own (which then sees plaintext).

    Failure messages and stack traces move into an encrypted payload too, unless the converter
    has a failure converter of its own. Returns `converter` itself when it already encrypts.
    """
    if encryption_codec(converter.payload_codec) is not None:
        return converter
    ours = EncryptionCodec(keyring)
    codec = ours if converter.payload_codec is None else ChainedCodec([converter.payload_codec, ours])
    failures = converter.failure_converter_class
    if failures is DefaultFailureConverter:
        failures = DefaultFailureConverterWithEncodedAttributes
    elif failures is FittedFailureConverter:
        failures = FittedFailureConverterWithEncodedAttributes
    return dataclasses.replace(converter, payload_codec=codec, failure_converter_class=failures)
