"""Where payloads too large for Temporal's history go, and the converter that sends them there.

Temporal refuses payloads over 2 MiB (a large activity result fails the activity; a
large activity input hangs the workflow), and every byte in history is replayed
and counted against the 50 MiB history limit. Large payloads are stored as objects
instead and history keeps a small reference; any client or worker whose converter
comes from `with_external_storage` with the same settings can read them back.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from temporalio.contrib.aws.s3driver import S3StorageDriver, S3StorageDriverClient
from temporalio.converter import DataConverter, ExternalStorage, StorageDriver

from stalwart.activities.storage.encryption import KEYS_VAR, Keyring, is_sealed_object
from stalwart.activities.storage.objects import (
    LazyS3ObjectClient,
    LocalObjectClient,
    ObjectNotFoundError,
    PrefixedObjectClient,
)
from stalwart.contracts.errors import ConfigurationError, MissingEncryptionKey

STORAGE_VAR = "STALWART_STORAGE"
ENDPOINT_VAR = "STALWART_S3_ENDPOINT_URL"
THRESHOLD_VAR = "STALWART_STORAGE_THRESHOLD_BYTES"

DATA_HOME_VAR = "XDG_DATA_HOME"
# Where versions before 0.2 kept payloads by default: under the working directory of each process.
LEGACY_LOCAL_DIR = Path(".stalwart") / "storage"
DEFAULT_THRESHOLD_BYTES = 256 * 1024
# The name stored in every reference in history: workers must register a driver under
# this name to read them, whichever store is behind it.
DRIVER_NAME = "stalwart.storage"
LOCAL_BUCKET = "payloads"
TRANSCRIPTS_AREA = "transcripts"

_ACCEPTED_FORMS = (
    f"{STORAGE_VAR} accepts: unset (a local directory, $XDG_DATA_HOME/stalwart/storage or "
    "~/.local/share/stalwart/storage), a directory path, "
    "file:///absolute/path, or s3://bucket[/prefix]"
)
# S3's bucket naming rules, less the rarely relevant exceptions (IP-shaped names, reserved suffixes).
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


@dataclass(frozen=True)
class StorageConfig:
    """One storage location: a local directory (`local_root`) or an S3 bucket (`s3_bucket`), never both.

    Credentials are deliberately not fields: boto finds them itself, and a config
    is logged and passed around where secrets should not be.
    """

    local_root: Path | None = None
    s3_bucket: str | None = None
    s3_prefix: str = ""
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    threshold_bytes: int = DEFAULT_THRESHOLD_BYTES

    def __post_init__(self) -> None:
        if (self.local_root is None) == (self.s3_bucket is None):
            raise StorageSettingError("StorageConfig needs exactly one of local_root (a directory) or s3_bucket")
        if self.local_root is not None and not self.local_root.is_absolute():
            raise StorageSettingError(
                f"StorageConfig.local_root {str(self.local_root)!r} is relative: resolve it "
                "(Path(...).resolve()) so every process finds the same directory"
            )
        if self.s3_bucket is not None and not _BUCKET_NAME.fullmatch(self.s3_bucket):
            raise StorageSettingError(
                f"S3 bucket name {self.s3_bucket!r} is not valid: use 3-63 lowercase letters, digits, '.' or '-', "
                "starting and ending with a letter or digit"
            )
        if self.s3_prefix != self.s3_prefix.strip("/"):
            object.__setattr__(self, "s3_prefix", self.s3_prefix.strip("/"))
        if self.threshold_bytes < 0:
            raise StorageSettingError(f"threshold_bytes is {self.threshold_bytes}: use 0 (store every payload) or more")

    @property
    def is_local(self) -> bool:
        return self.local_root is not None

    @property
    def bucket(self) -> str:
        """The bucket objects go to: the configured one for S3, a fixed folder name under a local root."""
        return self.s3_bucket if self.s3_bucket is not None else LOCAL_BUCKET

    def describe(self) -> str:
        """The location as a user would write it in `STALWART_STORAGE`, for logs and error messages."""
        if self.local_root is not None:
            return str(self.local_root)
        location = f"s3://{self.s3_bucket}" + (f"/{self.s3_prefix}" if self.s3_prefix else "")
        return location + (f" at {self.s3_endpoint_url}" if self.s3_endpoint_url else "")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StorageConfig:
        """Read `STALWART_STORAGE`, `STALWART_S3_ENDPOINT_URL` and `STALWART_STORAGE_THRESHOLD_BYTES`.

        A relative directory is resolved against the current directory now, so that
        a later `chdir` cannot send some payloads elsewhere.
        """
        env = os.environ if environ is None else environ
        threshold = _threshold(env.get(THRESHOLD_VAR, ""))
        location = env.get(STORAGE_VAR, "").strip()
        if not location:
            root = default_local_root(env)
            _warn_of_legacy_storage(root)
            return cls(local_root=root, threshold_bytes=threshold)
        scheme = _URL_SCHEME.match(location)
        kind = scheme.group(1).lower() if scheme is not None else ""
        if scheme is None or (kind not in ("file", "s3") and not location[scheme.end() :].startswith("//")):
            # A colon alone does not make a URL: `runs:archive` is a legal directory name.
            return cls(local_root=_resolved(Path(location)), threshold_bytes=threshold)
        parts = urlsplit(location)
        if kind == "file" and location[len("file:") :].startswith("//"):
            if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
                raise StorageSettingError(
                    f"{STORAGE_VAR}={location!r} is not an absolute file URL: write file:///absolute/path"
                )
            return cls(local_root=_resolved(Path(unquote(parts.path))), threshold_bytes=threshold)
        if kind == "s3" and location[len("s3:") :].startswith("//"):
            if not parts.netloc:
                raise StorageSettingError(f"{STORAGE_VAR}={location!r} names no bucket: write s3://bucket[/prefix]")
            if parts.query or parts.fragment:
                raise StorageSettingError(
                    f"{STORAGE_VAR}={location!r} has a query or fragment: write s3://bucket[/prefix]"
                )
            return cls(
                s3_bucket=parts.netloc,
                s3_prefix=unquote(parts.path).strip("/"),
                s3_endpoint_url=_endpoint(env.get(ENDPOINT_VAR, "")),
                s3_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
                threshold_bytes=threshold,
            )
        raise StorageSettingError(
            f"{STORAGE_VAR}={location!r} is not a storage location Stalwart can use. {_ACCEPTED_FORMS}."
        )


class StorageSettingError(ConfigurationError):
    """A `STALWART_STORAGE*` or `STALWART_S3_ENDPOINT_URL` value that cannot be used; the message names the variable
    and the forms it takes, so the CLI says it in one line."""


def default_local_root(environ: Mapping[str, str] | None = None) -> Path:
    """The storage folder when `STALWART_STORAGE` is unset: the user's data folder, whatever the working directory.

    Every client and worker of one user on one machine finds the same payloads and conversations without
    configuration. (It was `./.stalwart/storage`: a `stalwart dev` started in one folder and a `stalwart run`,
    `show` or `worker` in another each had their own, and a run whose input or archived steps the other wrote
    could not be read.)
    """
    env = os.environ if environ is None else environ
    data_home = env.get(DATA_HOME_VAR, "").strip()
    # The XDG rule: a relative XDG_DATA_HOME is invalid and ignored.
    base = Path(data_home) if data_home and Path(data_home).is_absolute() else Path.home() / ".local" / "share"
    return (base / "stalwart" / "storage").resolve()


def _warn_of_legacy_storage(root: Path) -> None:
    _warn_once_of_legacy_storage((Path.cwd() / LEGACY_LOCAL_DIR).resolve(), root)


@functools.cache
def _warn_once_of_legacy_storage(legacy: Path, root: Path) -> None:
    """Once per process and folder: a worker reads its storage setting for its converter, store and activities."""
    if legacy != root and legacy.is_dir() and any(legacy.iterdir()):
        logging.getLogger(__name__).warning(
            "%s holds payloads stored by an older Stalwart, whose default storage was ./%s; the default is now %s. "
            "Runs that stored payloads there read them only with %s=%s",
            legacy,
            LEGACY_LOCAL_DIR,
            root,
            STORAGE_VAR,
            legacy,
        )


def _resolved(path: Path) -> Path:
    return path.expanduser().resolve()


def _threshold(raw: str) -> int:
    if not raw.strip():
        return DEFAULT_THRESHOLD_BYTES
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise StorageSettingError(
            f"{THRESHOLD_VAR}={raw!r} is not a byte count: set a whole number of bytes, "
            f"e.g. {DEFAULT_THRESHOLD_BYTES} (the default), or 0 to store every payload"
        )
    return value


def _endpoint(raw: str) -> str | None:
    raw = raw.strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise StorageSettingError(f"{ENDPOINT_VAR}={raw!r} is not an HTTP URL: write e.g. http://localhost:9000")
    return raw


def object_client(config: StorageConfig) -> S3StorageDriverClient:
    """A client for the configured location; for S3 it opens its connections on first use.

    Call `aclose()` on an S3 client when done with it, if the process outlives it.
    """
    if config.local_root is not None:
        return LocalObjectClient(config.local_root)
    client: S3StorageDriverClient = LazyS3ObjectClient(
        endpoint_url=config.s3_endpoint_url, region_name=config.s3_region
    )
    if config.s3_prefix:
        client = PrefixedObjectClient(client, config.s3_prefix)
    return client


def storage_driver(config: StorageConfig, client: S3StorageDriverClient | None = None) -> StorageDriver:
    """The SDK's S3 driver over the configured location (or over `client`, to share or close it yourself)."""
    return S3StorageDriver(
        client=client if client is not None else object_client(config),
        bucket=config.bucket,
        driver_name=DRIVER_NAME,
    )


def external_storage(config: StorageConfig, client: S3StorageDriverClient | None = None) -> ExternalStorage:
    return ExternalStorage(
        drivers=[storage_driver(config, client)],
        payload_size_threshold=config.threshold_bytes,
    )


def with_external_storage(
    data_converter: DataConverter,
    config: StorageConfig | None = None,
    client: S3StorageDriverClient | None = None,
) -> DataConverter:
    """`data_converter` with large payloads stored at `config` (default: from the environment).

    Every client and worker of a namespace needs it, with the same location: a
    process without it cannot read the references the others put in history.
    """
    config = StorageConfig.from_env() if config is None else config
    return dataclasses.replace(data_converter, external_storage=external_storage(config, client))


class ObjectStore:
    """Named objects beside the payloads, in their own `transcripts/` area of the same bucket.

    Keys here are chosen by Stalwart (not content hashes), so they are kept out of
    the driver's `v0/` area and cannot collide with or overwrite a stored payload.
    With `encryption` (by default from `STALWART_ENCRYPTION_KEYS`), objects are sealed with
    AES-256-GCM like payloads are; objects written before encryption was on are still read.
    """

    def __init__(
        self, client: S3StorageDriverClient, bucket: str, encryption: Keyring | None = None, *, location: str = ""
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._keyring = encryption
        self.location = location
        """Where the objects are, as `STALWART_STORAGE` says it: named by errors about a missing object."""

    @classmethod
    def from_config(
        cls,
        config: StorageConfig | None = None,
        client: S3StorageDriverClient | None = None,
        encryption: Keyring | None = None,
    ) -> ObjectStore:
        config = StorageConfig.from_env() if config is None else config
        keyring = encryption if encryption is not None else Keyring.from_env()
        client = client if client is not None else object_client(config)
        return cls(client, config.bucket, keyring, location=config.describe())

    @property
    def client(self) -> S3StorageDriverClient:
        return self._client

    def object_key(self, key: str) -> str:
        """The full object key for `key`; raises `ValueError` for a key that would leave the transcripts area."""
        if not key or key.startswith("/") or any(part in ("", ".", "..") for part in key.split("/")):
            raise ValueError(
                f"transcript key {key!r} is not a plain relative name: use names separated by single slashes, "
                "without '.', '..' or a leading '/'"
            )
        return f"{TRANSCRIPTS_AREA}/{key}"

    async def put(self, key: str, data: bytes) -> None:
        if self._keyring is not None:
            data = self._keyring.seal_object(data)
        await self._client.put_object(bucket=self._bucket, key=self.object_key(key), data=data)

    def _opened(self, key: str, data: bytes) -> bytes:
        if not is_sealed_object(data):
            return data
        if self._keyring is None:
            raise MissingEncryptionKey(
                f"stored object {key!r} is encrypted and this process has no keys: set {KEYS_VAR} "
                "as the workers that wrote it have it"
            )
        return self._keyring.open_object(data)

    async def get(self, key: str) -> bytes | None:
        """The object's bytes, or None if nothing was stored under `key`."""
        object_key = self.object_key(key)
        try:
            data = await self._client.get_object(bucket=self._bucket, key=object_key)
        except ObjectNotFoundError:
            return None
        except Exception:
            # A client from elsewhere signals a missing object its own way; ask before failing.
            if not await self._client.object_exists(bucket=self._bucket, key=object_key):
                return None
            raise
        return self._opened(key, data)
