"""Object clients for the SDK's S3 storage driver: a directory on disk, an S3 bucket, a key prefix.

Temporal's `S3StorageDriver` does the real work (content-addressed keys, integrity
checks, claims); it only needs something that can put, get and test objects. A
directory behind the same interface lets a laptop, CI and a production bucket share
one driver, so a payload stored by one worker can be read by any other worker that
sees the same directory or bucket.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import uuid
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.contrib.aws.s3driver import S3StorageDriverClient

from stalwart.contracts.errors import NotFound

if TYPE_CHECKING:
    from types_aiobotocore_s3.client import S3Client


class ObjectNotFoundError(NotFound, FileNotFoundError):
    """No object at this bucket and key.

    One error for every client here, so callers that treat a missing object as
    "nothing stored yet" need not know which store they talk to.
    """


def _checked_segments(what: str, value: str) -> list[str]:
    """The `/`-separated segments of a bucket or key, refusing anything a filesystem would read as navigation.

    S3 treats `..`, `.` and `//` as ordinary key characters, but on disk they would
    reach outside the storage root or alias another object.
    """
    if not value:
        raise ValueError(f"empty object {what}: give a non-empty {what}")
    if value.startswith("/"):
        raise ValueError(f"object {what} {value!r} is absolute: give a {what} relative to the storage root")
    if "\x00" in value:
        raise ValueError(f"object {what} {value!r} contains a NUL byte: remove it")
    segments = value.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise ValueError(
                f"object {what} {value!r} has a {segment or 'empty'!r} segment, which could leave the storage root "
                f"or alias another object: use plain names separated by single slashes"
            )
    return segments


class LocalObjectClient(S3StorageDriverClient):
    """Objects as files under `root/bucket/key`, for one machine or a shared volume.

    Writes go to a temporary file that is renamed into place, so a reader (another
    worker, or this one after a crash) sees either the whole object or none: the
    driver treats an existing key as already stored, and a half-written file would
    then fail its integrity check forever.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root).expanduser().absolute()

    @property
    def root(self) -> Path:
        return self._root

    def path_for(self, *, bucket: str, key: str) -> Path:
        """The file that holds an object; raises `ValueError` for a bucket or key that would escape the root."""
        bucket_segments = _checked_segments("bucket", bucket)
        if len(bucket_segments) != 1:
            raise ValueError(f"object bucket {bucket!r} contains '/': a bucket is a single name")
        path = self._root.joinpath(bucket, *_checked_segments("key", key))
        # The segment checks already rule out escapes; this guards against a future change to them.
        if os.path.commonpath([self._root, path]) != str(self._root):
            raise ValueError(f"object key {key!r} resolves outside {self._root}: use a relative key without '..'")
        return path

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        path = self.path_for(bucket=bucket, key=key)
        await asyncio.to_thread(_write_atomically, path, data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        path = self.path_for(bucket=bucket, key=key)
        return await asyncio.to_thread(path.is_file)

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        path = self.path_for(bucket=bucket, key=key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError as e:
            raise ObjectNotFoundError(f"no object {bucket}/{key} under {self._root}") from e

    def describe(self) -> Mapping[str, str]:
        return {"local_root": str(self._root)}


def _write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that no reader ever sees a partial file, and the object outlives a crash of the
    machine once this returns.

    The file is synced before it is renamed into place (a reader sees the whole object or none), and its folder
    after: until then the rename itself may not be on disk, and a power loss could take an object whose put had
    returned, such as the conversation segment the next model call of a run must read.
    """
    _make_folder(path.parent)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    _sync_folder(path.parent)


def _make_folder(folder: Path) -> None:
    """Create `folder` and its missing parents, each one's entry synced in the folder above it.

    A new folder is a write to its parent: until that parent is synced, a power loss could take the new folder
    with every object put under it (a new chain's first conversation segment), however well each was synced.
    """
    if folder.is_dir():
        return
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another writer made it first; syncing its parent again is harmless
            new.mkdir()
        _sync_folder(new.parent)


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP):  # a file system that cannot sync a folder
            raise
    finally:
        os.close(descriptor)


class PrefixedObjectClient(S3StorageDriverClient):
    """Keeps every key of a wrapped client under `prefix/`, so Stalwart can share a bucket with other data.

    The driver's claims record keys without the prefix, so the prefix is part of
    where stored payloads are found: changing it leaves running workflows unable
    to read the payloads they already stored.
    """

    def __init__(self, inner: S3StorageDriverClient, prefix: str) -> None:
        prefix = prefix.strip("/")
        if not prefix:
            raise ValueError("empty key prefix: use the inner client directly")
        self._inner = inner
        self._prefix = prefix

    @property
    def inner(self) -> S3StorageDriverClient:
        return self._inner

    @property
    def prefix(self) -> str:
        return self._prefix

    def _key(self, key: str) -> str:
        return f"{self._prefix}/{key}"

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        await self._inner.put_object(bucket=bucket, key=self._key(key), data=data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        return await self._inner.object_exists(bucket=bucket, key=self._key(key))

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        return await self._inner.get_object(bucket=bucket, key=self._key(key))

    async def aclose(self) -> None:
        """Close the wrapped client, when it holds connections."""
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()

    def describe(self) -> Mapping[str, str]:
        return {**self._inner.describe(), "key_prefix": self._prefix}


_MISSING_S3_EXTRA = (
    "S3 storage needs aioboto3, which Stalwart does not install by default: "
    "`pip install 'stalwart[s3]'` (or `pip install 'temporalio[aioboto3]'`)"
)


class LazyS3ObjectClient(S3StorageDriverClient):
    """An aioboto3 S3 client that opens on first use, inside the event loop that uses it.

    aioboto3 clients are async context managers bound to the loop they were opened
    in, while data converters are built before any loop runs (at import, or in a
    synchronous `main`). Opening on first use lets a converter be built anywhere.
    Credentials and, unless given, the region come from boto's usual chain
    (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, instance roles).
    """

    def __init__(self, *, endpoint_url: str | None = None, region_name: str | None = None) -> None:
        self._endpoint_url = endpoint_url
        self._region_name = region_name
        self._client: S3StorageDriverClient | None = None
        self._raw: S3Client | None = None
        self._stack: AsyncExitStack | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening = asyncio.Lock()

    async def _opened(self) -> S3StorageDriverClient:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is loop:
            return self._client
        async with self._opening:
            if self._client is not None:
                if self._loop is not loop:
                    raise RuntimeError(
                        "this S3 object client was opened in another event loop; "
                        "build one client (one `with_external_storage` converter) per event loop"
                    )
                return self._client
            try:
                import aioboto3
                from aiobotocore.config import AioConfig
                from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
            except ImportError as e:
                raise ImportError(_MISSING_S3_EXTRA) from e
            # S3-compatible stores (MinIO, moto) rarely serve bucket-named hosts; path-style works everywhere.
            config = AioConfig(s3={"addressing_style": "path"}) if self._endpoint_url else None
            stack = AsyncExitStack()
            raw = await stack.enter_async_context(
                aioboto3.Session().client(
                    "s3", endpoint_url=self._endpoint_url, region_name=self._region_name, config=config
                )
            )
            self._stack, self._raw, self._loop = stack, raw, loop
            self._client = new_aioboto3_client(raw)
            return self._client

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        await (await self._opened()).put_object(bucket=bucket, key=key, data=data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        return await (await self._opened()).object_exists(bucket=bucket, key=key)

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        client = await self._opened()
        try:
            return await client.get_object(bucket=bucket, key=key)
        except Exception as e:
            if _is_missing_object(e):
                raise ObjectNotFoundError(f"no object s3://{bucket}/{key}") from e
            raise

    async def aclose(self) -> None:
        """Close the connection pool; the next call opens a new one."""
        stack, self._stack, self._raw, self._client, self._loop = self._stack, None, None, None, None
        if stack is not None:
            await stack.aclose()

    def describe(self) -> Mapping[str, str]:
        info: dict[str, str] = {}
        if self._endpoint_url:
            info["endpoint_url"] = self._endpoint_url
        region = self._raw.meta.region_name if self._raw is not None else self._region_name
        if region:
            info["client_region"] = region
        return info


def _is_missing_object(error: Exception) -> bool:
    response = getattr(error, "response", None)
    if not isinstance(response, Mapping):
        return False
    code = response.get("Error", {}).get("Code")
    return code in ("NoSuchKey", "404", "NotFound")
