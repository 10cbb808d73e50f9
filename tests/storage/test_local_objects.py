"""The local object client and the transcripts store: files under a root, written whole, never outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stalwart.activities.storage import LocalObjectClient, ObjectNotFoundError, ObjectStore, PrefixedObjectClient


async def test_local_client_round_trips_an_object_as_a_file_under_root_bucket_key(tmp_path: Path):
    client = LocalObjectClient(tmp_path)
    data = os.urandom(3 * 1024 * 1024)

    assert not await client.object_exists(bucket="payloads", key="v0/ns/default/d/sha256/abc")
    await client.put_object(bucket="payloads", key="v0/ns/default/d/sha256/abc", data=data)

    assert await client.object_exists(bucket="payloads", key="v0/ns/default/d/sha256/abc")
    assert await client.get_object(bucket="payloads", key="v0/ns/default/d/sha256/abc") == data
    assert (tmp_path / "payloads" / "v0" / "ns" / "default" / "d" / "sha256" / "abc").read_bytes() == data


async def test_local_client_overwrites_an_object_whole(tmp_path: Path):
    client = LocalObjectClient(tmp_path)
    await client.put_object(bucket="b", key="k", data=b"first version, longer")
    await client.put_object(bucket="b", key="k", data=b"second")
    assert await client.get_object(bucket="b", key="k") == b"second"


async def test_local_client_reports_a_missing_object_as_object_not_found(tmp_path: Path):
    with pytest.raises(ObjectNotFoundError):
        await LocalObjectClient(tmp_path).get_object(bucket="b", key="nothing/here")


async def test_local_client_writes_atomically_leaving_no_partial_or_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A write that dies half-way leaves the previous object intact and no stray file a reader could pick up."""
    client = LocalObjectClient(tmp_path)
    await client.put_object(bucket="b", key="obj", data=b"old")

    real_replace = os.replace

    def crash_before_rename(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash_before_rename)
    with pytest.raises(OSError, match="disk gone"):
        await client.put_object(bucket="b", key="obj", data=b"new" * 1000)
    monkeypatch.setattr(os, "replace", real_replace)

    assert await client.get_object(bucket="b", key="obj") == b"old"
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["obj"]


async def test_local_client_syncs_the_file_before_its_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Without the folder's sync the rename may not be on disk yet: a power loss could take an object whose put
    had returned (a conversation segment the run's next model call must read)."""
    done: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        target = Path(os.readlink(f"/proc/self/fd/{descriptor}"))
        done.append("sync folder" if target.is_dir() else "sync file")
        real_fsync(descriptor)

    def replace(src: str, dst: str) -> None:
        done.append("rename")
        real_replace(src, dst)

    client = LocalObjectClient(tmp_path)
    await client.put_object(bucket="b", key="chain/00000001.json", data=b"[]")
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    await client.put_object(bucket="b", key="chain/00000002.json", data=b"[]")
    assert done == ["sync file", "rename", "sync folder"]


async def test_local_client_syncs_the_folder_above_each_folder_it_creates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A new folder (a new chain's) is an entry in its parent: unsynced, a power loss could take it with the
    objects under it, though each of them was synced."""
    synced: list[Path] = []
    real_fsync = os.fsync

    def fsync(descriptor: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    root = tmp_path / "root"
    await LocalObjectClient(root).put_object(bucket="b", key="chain/results/r.json", data=b"{}")
    folders = [path for path in synced if path.is_dir()]
    assert folders == [tmp_path, root, root / "b", root / "b" / "chain", root / "b" / "chain" / "results"]


@pytest.mark.parametrize(
    ("bucket", "key"),
    [
        ("b", "../outside"),
        ("b", "a/../../outside"),
        ("b", "/etc/passwd"),
        ("b", "a//b"),
        ("b", "./a"),
        ("b", ""),
        ("..", "k"),
        ("a/b", "k"),
        ("/abs", "k"),
    ],
)
async def test_local_client_refuses_buckets_and_keys_that_could_escape_the_root(tmp_path: Path, bucket: str, key: str):
    client = LocalObjectClient(tmp_path / "root")
    with pytest.raises(ValueError, match="object (bucket|key)"):
        await client.put_object(bucket=bucket, key=key, data=b"x")
    with pytest.raises(ValueError, match="object (bucket|key)"):
        await client.get_object(bucket=bucket, key=key)
    with pytest.raises(ValueError, match="object (bucket|key)"):
        await client.object_exists(bucket=bucket, key=key)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


async def test_prefixed_client_keeps_every_key_under_its_prefix(tmp_path: Path):
    inner = LocalObjectClient(tmp_path)
    client = PrefixedObjectClient(inner, "/team/stalwart/")
    await client.put_object(bucket="b", key="k", data=b"x")
    assert await client.object_exists(bucket="b", key="k")
    assert await client.get_object(bucket="b", key="k") == b"x"
    assert (tmp_path / "b" / "team" / "stalwart" / "k").read_bytes() == b"x"
    assert client.describe()["key_prefix"] == "team/stalwart"


async def test_object_store_keeps_transcripts_in_their_own_area_and_returns_none_when_missing(tmp_path: Path):
    store = ObjectStore(LocalObjectClient(tmp_path), "payloads")
    assert await store.get("run-1/transcript.jsonl") is None

    await store.put("run-1/transcript.jsonl", b'{"role": "user"}\n')

    assert await store.get("run-1/transcript.jsonl") == b'{"role": "user"}\n'
    assert (tmp_path / "payloads" / "transcripts" / "run-1" / "transcript.jsonl").is_file()


@pytest.mark.parametrize("key", ["../v0/ns/default/d/sha256/abc", "/abs", "a//b", "", "."])
async def test_object_store_refuses_keys_that_leave_the_transcripts_area(tmp_path: Path, key: str):
    store = ObjectStore(LocalObjectClient(tmp_path), "payloads")
    with pytest.raises(ValueError, match="transcript key"):
        await store.put(key, b"x")
    with pytest.raises(ValueError, match="transcript key"):
        await store.get(key)


async def test_a_conversation_missing_from_storage_is_an_error_naming_where_this_process_looked(tmp_path: Path):
    from stalwart.activities.storage import StorageConfig
    from stalwart.activities.transcripts import TranscriptError, TranscriptStore
    from stalwart.contracts.messages import TranscriptRef

    elsewhere = tmp_path / "not-the-workers-folder"
    store = TranscriptStore(ObjectStore.from_config(StorageConfig(local_root=elsewhere)))
    ref = TranscriptRef(chain_id="chain-1", segments=1, messages=1, sha256="0" * 64)
    with pytest.raises(TranscriptError) as missing:
        await store.read(ref)
    assert f"not in storage ({elsewhere})" in str(missing.value)
    assert "STALWART_STORAGE" in str(missing.value)
