"""Payloads of any size: large ones live in a directory or an S3 bucket, history keeps a reference.

With `STALWART_ENCRYPTION_KEYS` set, payloads and stored objects are sealed with AES-256-GCM (encryption.py).
Importing this package does not import aioboto3: S3 support is the optional
`stalwart[s3]` extra and loads on the first S3 call.
"""

from stalwart.activities.storage.config import (
    DEFAULT_THRESHOLD_BYTES,
    DRIVER_NAME,
    LOCAL_BUCKET,
    ObjectStore,
    StorageConfig,
    external_storage,
    object_client,
    storage_driver,
    with_external_storage,
)
from stalwart.activities.storage.encryption import ChainedCodec, EncryptionCodec, EncryptionKeyError, Keyring
from stalwart.activities.storage.objects import (
    LazyS3ObjectClient,
    LocalObjectClient,
    ObjectNotFoundError,
    PrefixedObjectClient,
)

__all__ = [
    "DEFAULT_THRESHOLD_BYTES",
    "DRIVER_NAME",
    "LOCAL_BUCKET",
    "ChainedCodec",
    "EncryptionCodec",
    "EncryptionKeyError",
    "Keyring",
    "LazyS3ObjectClient",
    "LocalObjectClient",
    "ObjectNotFoundError",
    "ObjectStore",
    "PrefixedObjectClient",
    "StorageConfig",
    "external_storage",
    "object_client",
    "storage_driver",
    "with_external_storage",
]
