"""Payload encryption: AES-256-GCM codec, key rotation, sealed storage, and a real run on the dev server."""

from __future__ import annotations

import asyncio
import base64
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from stalwart.activities.storage import LOCAL_BUCKET, ObjectStore, StorageConfig
from stalwart.activities.storage.converter import stalwart_converter
from stalwart.activities.storage.encryption import (
    KEY_FILE_VAR,
    KEYS_VAR,
    ChainedCodec,
    EncryptionCodec,
    EncryptionKeyError,
    Keyring,
)
from stalwart.activities.storage.failures import FittedFailureConverterWithEncodedAttributes
from stalwart.activities.storage.objects import LocalObjectClient
from stalwart.activities.tools import tool
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.workers.dev_server import DevServer
from stalwart.workers.worker import build_worker, default_registry


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def keyring(*ids: str, keys: dict[str, str] | None = None) -> Keyring:
    keys = keys if keys is not None else {}
    return Keyring.parse(",".join(f"{i}:{keys.setdefault(i, new_key())}" for i in ids))


async def test_a_payload_is_sealed_with_the_first_key_and_its_id_is_in_the_metadata():
    converter = stalwart_converter(encryption=keyring("k1", "k0"))
    [payload] = await converter.encode(["the secret goal"])
    assert payload.metadata["encoding"] == b"binary/encrypted"
    assert payload.metadata["encryption-key-id"] == b"k1"
    assert payload.metadata["encryption-cipher"] == b"AES-256-GCM"
    assert b"secret" not in payload.SerializeToString()
    assert await converter.decode([payload], [str]) == ["the secret goal"]


async def test_a_rotated_keyring_reads_the_old_key_and_writes_the_new_one():
    keys: dict[str, str] = {}
    old = stalwart_converter(encryption=keyring("old", keys=keys))
    rotated = stalwart_converter(encryption=keyring("new", "old", keys=keys))
    only_new = stalwart_converter(encryption=keyring("new", keys=keys))
    [sealed_by_old] = await old.encode(["written before the rotation"])

    assert await rotated.decode([sealed_by_old], [str]) == ["written before the rotation"]
    [sealed_by_new] = await rotated.encode(["written after"])
    assert sealed_by_new.metadata["encryption-key-id"] == b"new"
    assert await only_new.decode([sealed_by_new], [str]) == ["written after"]
    with pytest.raises(EncryptionKeyError, match=f"key 'old'.*not among the configured keys.*add it to {KEYS_VAR}"):
        await only_new.decode([sealed_by_old], [str])


async def test_a_key_changed_under_the_same_id_or_altered_data_is_refused():
    [payload] = await stalwart_converter(encryption=keyring("k")).encode(["x"])
    with pytest.raises(EncryptionKeyError, match="does not decrypt with the configured key"):
        await stalwart_converter(encryption=keyring("k")).decode([payload], [str])


async def test_payloads_written_before_encryption_was_on_are_still_read():
    [plain] = await stalwart_converter().encode(["from before"])
    assert await stalwart_converter(encryption=keyring("k")).decode([plain], [str]) == ["from before"]


class Reversing(PayloadCodec):
    """A user's own codec: it must see plaintext (it runs before encryption) and keep working."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        self.seen += [p.data for p in payloads]
        return [Payload(metadata={**p.metadata, "reversed": b"1"}, data=p.data[::-1]) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(metadata={k: v for k, v in p.metadata.items() if k != "reversed"}, data=p.data[::-1])
            for p in payloads
        ]


async def test_a_users_own_codec_runs_first_and_the_converter_is_not_wrapped_twice():
    from temporalio.converter import DataConverter

    own = Reversing()
    users = DataConverter(payload_codec=own)
    converter = stalwart_converter(users, encryption=keyring("k"))
    assert isinstance(converter.payload_codec, ChainedCodec)
    assert converter.payload_codec.codecs[0] is own
    assert isinstance(converter.payload_codec.codecs[1], EncryptionCodec)
    # messages and stack traces go into the encrypted payload, fitted to Temporal's failure size limit first
    assert converter.failure_converter_class is FittedFailureConverterWithEncodedAttributes
    assert stalwart_converter(converter, encryption=keyring("other")) is converter

    [payload] = await converter.encode(["readable to the user's codec"])
    assert own.seen == [b'"readable to the user\'s codec"']
    assert payload.metadata["encoding"] == b"binary/encrypted"
    assert await converter.decode([payload], [str]) == ["readable to the user's codec"]


def test_keys_come_from_the_variable_or_a_file_and_bad_ones_say_how_to_fix_them(tmp_path: Path):
    key = new_key()
    assert Keyring.from_env({}) is None
    assert Keyring.from_env({KEYS_VAR: f"a:{key}, b:{new_key()}"}).ids == ["a", "b"]  # type: ignore[union-attr]
    file = tmp_path / "keys"
    file.write_text(f"# rotated 2026-11\nnew:{new_key()}\nold:{key}\n")
    from_file = Keyring.from_env({KEY_FILE_VAR: str(file)})
    assert from_file is not None and from_file.ids == ["new", "old"] and from_file.key("old") == base64.b64decode(key)

    with pytest.raises(EncryptionKeyError, match="not base64.*openssl rand -base64 32"):
        Keyring.from_env({KEYS_VAR: "a:not base64!"})
    with pytest.raises(EncryptionKeyError, match="is 16 bytes; AES-256 needs 32"):
        Keyring.from_env({KEYS_VAR: f"a:{base64.b64encode(bytes(16)).decode()}"})
    with pytest.raises(EncryptionKeyError, match="has no key id"):
        Keyring.from_env({KEYS_VAR: key})
    with pytest.raises(EncryptionKeyError, match="given twice"):
        Keyring.from_env({KEYS_VAR: f"a:{key},a:{key}"})
    with pytest.raises(EncryptionKeyError, match="keep one of them"):
        Keyring.from_env({KEYS_VAR: f"a:{key}", KEY_FILE_VAR: str(file)})
    with pytest.raises(EncryptionKeyError, match="cannot be read"):
        Keyring.from_env({KEY_FILE_VAR: str(tmp_path / "missing")})
    with pytest.raises(EncryptionKeyError) as shown:
        Keyring.from_env({KEYS_VAR: key})
    assert key not in str(shown.value), "an error message must not print a secret key"


async def test_stored_objects_are_sealed_and_objects_from_before_are_still_read(tmp_path: Path):
    keys = keyring("k")
    sealed = ObjectStore(LocalObjectClient(tmp_path), "b", keys)
    await sealed.put("chain/0.json", b'["the conversation"]')
    [file] = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert b"conversation" not in file.read_bytes()
    assert await sealed.get("chain/0.json") == b'["the conversation"]'

    await ObjectStore(LocalObjectClient(tmp_path), "b").put("chain/old.json", b"plain from before")
    assert await sealed.get("chain/old.json") == b"plain from before"
    with pytest.raises(ValueError, match=f"is encrypted and this process has no keys: set {KEYS_VAR}"):
        await ObjectStore(LocalObjectClient(tmp_path), "b").get("chain/0.json")


async def test_externally_stored_payloads_are_ciphertext_and_read_back(tmp_path: Path):
    """The SDK runs the codec before external storage: what reaches the bucket is already sealed."""
    storage = StorageConfig(local_root=tmp_path, threshold_bytes=0)
    converter = stalwart_converter(storage=storage, encryption=keyring("k"))
    [reference] = await converter.encode(["a payload big enough to be stored " * 10])
    assert reference.metadata["encoding"] == b"json/protobuf", "history keeps a reference"
    stored = [p for p in (tmp_path / LOCAL_BUCKET).rglob("*") if p.is_file()]
    assert stored and all(b"big enough" not in p.read_bytes() for p in stored)
    assert any(b"binary/encrypted" in p.read_bytes() for p in stored)
    assert await converter.decode([reference], [str]) == ["a payload big enough to be stored " * 10]


# -- a real run on the dev server ---------------------------------------------

MARK = uuid.uuid4().hex[:10]


@tool
def vault(code: str) -> str:
    """Looks up a code in the vault.

    Args:
        code: What to look up.
    """
    return f"vault-result-{code}-{MARK}"


def secret_agent(tag: str) -> tuple[AgentSpec, str, dict[str, str]]:
    secrets = {
        "instructions": f"instructions-{tag}-{MARK}",
        "tool result": f"vault-result-{tag}-{MARK}",
        "answer": f"answer-{tag}-{MARK}",
        "goal": f"goal-{tag}-{MARK}",
    }
    agent = AgentSpec(
        name="keeper",
        instructions=secrets["instructions"],
        tools=["vault"],
        budgets=Budgets(max_steps=4),
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="vault", arguments={"code": tag})]),
            ScriptedReply(text=secrets["answer"]),
        ],
    )
    # Long enough that the goal goes to external storage (threshold below), short parts stay in history.
    goal = secrets["goal"] + " " + "padding " * 600
    return agent, goal, secrets


async def _run_agent(address: str, agent: AgentSpec, goal: str) -> tuple[str, str]:
    client = await connect(address, from_config=False)
    task_queue = f"enc-{uuid.uuid4().hex[:8]}"
    registry = default_registry()
    registry.register(vault)
    async with build_worker(client, task_queue=task_queue, registry=registry):
        handle = await StalwartClient(client, task_queue=task_queue).start(agent, goal)
        result = await handle.result()
        state = await handle.state()
    assert result.stop_reason == "done"
    return result.answer, state.goal


def _everything_in(*roots: Path) -> bytes:
    return b"".join(p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file())


@pytest.mark.slow
async def test_with_encryption_no_prompt_tool_result_answer_or_goal_is_plain_text_on_the_server_or_in_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    storage = tmp_path / "storage"
    monkeypatch.setenv("STALWART_STORAGE", str(storage))
    monkeypatch.setenv("STALWART_STORAGE_THRESHOLD_BYTES", "2000")
    monkeypatch.delenv(KEYS_VAR, raising=False)
    monkeypatch.delenv(KEY_FILE_VAR, raising=False)
    server = DevServer(port=None, ui_port=None, db_file=tmp_path / "temporal" / "temporal.db")
    async with server:
        # The control: without keys the same kinds of text are found, so the search below can find them.
        plain_agent, plain_goal, plain = secret_agent("plain")
        assert await _run_agent(server.address, plain_agent, plain_goal) == (plain["answer"], plain_goal)

        monkeypatch.setenv(KEYS_VAR, f"k1:{new_key()}")
        agent, goal, secrets = secret_agent("sealed")
        answer, seen_goal = await _run_agent(server.address, agent, goal)
        assert (answer, seen_goal) == (secrets["answer"], goal), "a client with the keys reads everything back"
    server_files = _everything_in(tmp_path / "temporal")
    stored = _everything_in(storage)
    assert server_files and stored
    for what, text in plain.items():
        assert text.encode() in server_files + stored, f"control: the {what} of the plain run was not found"
    for what, text in secrets.items():
        assert text.encode() not in server_files, f"the {what} is in plain text in the dev server's SQLite file"
        assert text.encode() not in stored, f"the {what} is in plain text in storage"
    assert (secrets["goal"] + " padding").encode() not in stored
    assert b"binary/encrypted" in stored, "the goal was stored externally, sealed"


def test_a_key_file_of_raw_bytes_says_to_write_base64_not_a_traceback(tmp_path: Path):
    """`openssl rand 32 > keys` (raw bytes, not base64) is an easy slip; reading it as text must not crash."""
    file = tmp_path / "keys"
    file.write_bytes(b"\xff\xfe" + os.urandom(30))
    with pytest.raises(EncryptionKeyError, match=r"is not text.*ID:BASE64KEY.*openssl rand -base64 32"):
        Keyring.from_env({KEY_FILE_VAR: str(file)})


async def test_show_of_a_run_sealed_with_a_key_not_configured_here_names_the_key_not_an_invalid_input(dev_env):
    """With no worker to ask, show rebuilds the run from history; a goal it cannot decrypt was shown as an agent
    called 'invalid-input' with an empty goal, as if the run had been started wrong."""
    import subprocess
    import sys

    from temporalio.client import Client

    from stalwart.contracts.names import WORKFLOW_TYPE
    from stalwart.contracts.run_input import RunInput

    sealing = Keyring.parse(f"k9:{new_key()}")
    client = await Client.connect(dev_env.address, data_converter=stalwart_converter(encryption=sealing))
    run_id = f"sealed-{uuid.uuid4().hex[:8]}"
    await client.start_workflow(
        WORKFLOW_TYPE,
        RunInput(agent=AgentSpec(name="sealed"), goal="a goal sealed with k9"),
        id=run_id,
        task_queue=f"nobody-{run_id}",  # no worker: show reads the run from its history
    )
    env = {k: v for k, v in os.environ.items() if k not in (KEYS_VAR, KEY_FILE_VAR)}
    for keys, said in [
        ({KEYS_VAR: f"k1:{new_key()}"}, "encrypted with key 'k9', which is not among the configured keys (k1)"),
        ({}, "no encryption key is set here"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "stalwart.client.cli", "show", run_id, "--address", dev_env.address],
            env={**env, **keys},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 1 and said in done.stderr, done.stdout + done.stderr
        assert "invalid-input" not in done.stdout


def test_a_key_given_without_its_id_is_not_printed_even_in_part():
    """A bare key pasted without `ID:` is the secret itself; its first characters went into the error (and logs)."""
    key = new_key()
    with pytest.raises(EncryptionKeyError, match=r"entry 2 has no key id") as shown:
        Keyring.from_env({KEYS_VAR: f"a:{new_key()},{key}"})
    assert key[:6] not in str(shown.value)


async def test_show_of_a_run_its_worker_cannot_decrypt_says_the_worker_fails_it_not_that_none_runs(dev_env):
    """A worker without the key a client sealed the run with fails its workflow task again and again; show said
    'no worker is running', sending the operator to start one that was already there."""
    import subprocess
    import sys

    from temporalio.client import Client

    from stalwart.contracts.names import WORKFLOW_TYPE
    from stalwart.contracts.run_input import RunInput

    sealing, workers_key = f"k9:{new_key()}", f"k1:{new_key()}"
    queue = f"wrong-key-{uuid.uuid4().hex[:8]}"
    starter = await Client.connect(
        dev_env.address, data_converter=stalwart_converter(encryption=Keyring.parse(sealing))
    )
    worker_client = await Client.connect(
        dev_env.address, data_converter=stalwart_converter(encryption=Keyring.parse(workers_key))
    )
    async with build_worker(worker_client, task_queue=queue, registry=default_registry()):
        handle = await starter.start_workflow(
            WORKFLOW_TYPE, RunInput(agent=AgentSpec(name="sealed"), goal="sealed with k9"), id=queue, task_queue=queue
        )
        failed = False
        while not failed:
            failed = any(
                [e.HasField("workflow_task_failed_event_attributes") async for e in handle.fetch_history_events()]
            )
            await asyncio.sleep(0.1)
        env = {k: v for k, v in os.environ.items() if k not in (KEYS_VAR, KEY_FILE_VAR)}
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "stalwart.client.cli", "show", queue, "--address", dev_env.address],
            env={**env, KEYS_VAR: sealing},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        await handle.terminate()
    assert "no worker is running" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "fails this run's workflow task (EncryptionKeyError)" in done.stdout + done.stderr, done.stdout


def test_a_key_file_saved_with_a_byte_order_mark_and_crlf_reads_as_written(tmp_path: Path):
    """Windows editors save UTF-8 with a BOM and CRLF; the BOM became part of the first key's id, which was refused."""
    file = tmp_path / "keys"
    file.write_bytes(f"k1:{new_key()}\r\nk0:{new_key()}\r\n".encode("utf-8-sig"))
    keys = Keyring.from_env({KEY_FILE_VAR: str(file)})
    assert keys is not None and keys.ids == ["k1", "k0"]


async def test_run_followed_while_its_worker_cannot_decrypt_it_warns_instead_of_waiting_in_silence(dev_env):
    """`stalwart run` with keys the worker lacks printed the goal and then nothing, for ever."""
    import subprocess
    import sys

    from temporalio.client import Client

    from support.repo_paths import REPO

    queue = f"silent-{uuid.uuid4().hex[:8]}"
    worker_client = await Client.connect(
        dev_env.address, data_converter=stalwart_converter(encryption=Keyring.parse(f"k1:{new_key()}"))
    )
    env = {k: v for k, v in os.environ.items() if k not in (KEYS_VAR, KEY_FILE_VAR)}
    command = [sys.executable, "-m", "stalwart.client.cli", "run", str(REPO / "agents" / "calculator.toml"), "6*7?"]
    async with build_worker(worker_client, task_queue=queue, registry=default_registry()):
        process = await asyncio.create_subprocess_exec(
            *command,
            "--address",
            dev_env.address,
            "--task-queue",
            queue,
            env={**env, KEYS_VAR: f"k9:{new_key()}"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stderr is not None
        said = ""
        while "warning:" not in said:
            line = (await process.stderr.readline()).decode()
            assert line, f"stalwart run ended without the warning: {said}"
            said += line
        process.terminate()
        printed, _ = await process.communicate()
        run_id = printed.decode().split()[1]  # "run ID · agent ...": the run is left waiting; end it
        await worker_client.get_workflow_handle(run_id).terminate()
    assert "a worker fails this run's workflow task (EncryptionKeyError)" in said, said
    assert "STALWART_ENCRYPTION_KEYS" in said
