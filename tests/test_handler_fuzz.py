"""Every signal, update and query of a session, sent any number of arguments of any kind, by the `temporal` CLI and by
another SDK's client (raw payloads on the wire): the session goes on answering, no workflow task fails, and
`stalwart show` reads the history without a traceback.

A handler left to the SDK decodes its arguments by its signature: a `message` signal with two arguments failed
every workflow task of the session from then on, and one the SDK could not decode was dropped without a word.
Seeded randomness, a bounded number of calls: the same calls every run.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import random
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution
from temporalio.api.enums.v1 import EventType, UpdateWorkflowExecutionLifecycleStage
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.update.v1 import Input, Meta, Request, WaitPolicy
from temporalio.api.workflowservice.v1 import (
    QueryWorkflowRequest,
    SignalWorkflowExecutionRequest,
    UpdateWorkflowExecutionRequest,
    UpdateWorkflowExecutionResponse,
)
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from stalwart.activities.storage.encryption import KEY_FILE_VAR, KEYS_VAR
from stalwart.client.api import SessionHandle, StalwartClient
from stalwart.client.connection import connect
from stalwart.contracts.agent import AgentSpec, ScriptedReply, SessionSettings
from stalwart.contracts.run import AgentResult, RunEvent, RunState
from stalwart.workers.worker import build_worker

from support.repo_paths import REPO

TEMPORAL = Path(sys.prefix) / "bin" / "temporal"
STALWART = [sys.executable, "-m", "stalwart.client.cli"]
SIGNALS = ["message"]
UPDATES = ["send", "approve", "reject"]
QUERIES = ["state", "pending_approvals", "events"]
CALLS = 36
"""Calls per sender; each kind of payload comes up several times at this count with the seeds below."""


@dataclass(frozen=True)
class Kind:
    """One kind of argument: its encoding (None: no metadata at all), how its bytes are made, and any metadata
    beside the encoding (an encrypted one without it names a key nobody has)."""

    name: str
    encoding: str | None
    data: bytes
    metadata: tuple[tuple[str, bytes], ...] = ()


def _kinds(chance: random.Random) -> list[Kind]:
    noise = bytes(chance.randrange(256) for _ in range(48))
    return [
        Kind("text", "json/plain", b'"hello there"'),
        Kind("object", "json/plain", b'{"text": "hello"}'),
        Kind("number", "json/plain", b"42"),
        Kind("null", "json/plain", b"null"),
        Kind("empty text", "json/plain", b'""'),
        Kind("huge text", "json/plain", json.dumps("x" * 100_000).encode()),
        Kind("lone surrogate", "json/plain", b'"\\ud800"'),
        Kind("cut escape", "json/plain", b'"abc\\u12"'),
        Kind("invalid json", "json/plain", b'{"call_id": '),
        Kind("not utf-8", "json/plain", b'"\xff\xfe"'),
        Kind("binary", "binary/plain", noise),
        Kind("binary null", "binary/null", b""),
        Kind("unknown encoding", "binary/zstd", noise),
        Kind("encrypted without the key", "binary/encrypted", noise),
        Kind("protobuf garbage", "json/protobuf", noise),
        Kind("no metadata", None, noise),
    ]


def _payload(kind: Kind) -> Payload:
    metadata = {} if kind.encoding is None else {"encoding": kind.encoding.encode()}
    if kind.encoding == "binary/encrypted" and not kind.metadata:
        metadata["encryption-key-id"] = b"nobody-has-this-key"
    return Payload(metadata={**metadata, **dict(kind.metadata)}, data=kind.data)


def _session_agent() -> AgentSpec:
    return AgentSpec(
        name="fuzzed", scripted=[ScriptedReply(text="heard you")] * 200, session=SessionSettings(max_message_chars=1000)
    )


SEALING_KEY_ID = "k1"
SEALING_KEYS = f"{SEALING_KEY_ID}:{base64.b64encode(bytes(range(32))).decode()}"
"""The keys of the sealed sessions' worker and client (a test key: every byte known)."""


@pytest.fixture
def client(dev_env, task_queue: str) -> StalwartClient:
    return StalwartClient(dev_env.client, task_queue=task_queue)


@pytest.fixture
async def session(client: StalwartClient, dev_env, task_queue: str) -> AsyncIterator[SessionHandle]:
    """A session of the scripted agent with a worker serving it; terminated after the test if still open."""
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start_session(_session_agent(), session_id=f"fuzz-{uuid.uuid4().hex[:8]}")
        try:
            yield handle
        finally:
            with contextlib.suppress(Exception):
                await dev_env.client.get_workflow_handle(handle.run_id).terminate(reason="test over")


@pytest.fixture
async def sealed_session(dev_env, task_queue: str, monkeypatch) -> AsyncIterator[tuple[SessionHandle, Client]]:
    """A session whose worker and client encrypt (STALWART_ENCRYPTION_KEYS, which `stalwart show` reads too), and
    the client; terminated after the test if still open."""
    monkeypatch.setenv(KEYS_VAR, SEALING_KEYS)
    monkeypatch.delenv(KEY_FILE_VAR, raising=False)
    temporal = await connect(dev_env.address, from_config=False)
    async with build_worker(temporal, task_queue=task_queue):
        handle = await StalwartClient(temporal, task_queue=task_queue).start_session(
            _session_agent(), session_id=f"sealed-{uuid.uuid4().hex[:8]}"
        )
        try:
            yield handle, temporal
        finally:
            with contextlib.suppress(Exception):
                await temporal.get_workflow_handle(handle.run_id).terminate(reason="test over")


async def _no_failed_workflow_task_after_the_last_signal(handle: WorkflowHandle) -> None:
    """Wait until the workflow task that handled the last signal has ended, then hold that none failed.

    A signal that comes while a workflow task runs enters the history after that task: wait for it first."""
    signalled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ended = {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED}
    expected = _signals_sent.get(handle.id, 0) + 1
    _signals_sent[handle.id] = expected
    while True:
        events = [event.event_type for event in (await handle.fetch_history()).events]
        at = [i for i, kind in enumerate(events) if kind == signalled]
        if len(at) >= expected and ended & set(events[at[-1] + 1 :]):
            break
        await asyncio.sleep(0.05)
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in events, "a signal failed the session's workflow task"


_signals_sent: dict[str, int] = {}
"""Signals each session was sent so far, by workflow id."""


def _temporal(*args: str, address: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(TEMPORAL), *args, "--address", address], capture_output=True, stdin=subprocess.DEVNULL, check=False
    )


async def _from_the_cli(address: str, workflow_id: str, kind_of_call: str, name: str, kinds: list[Kind]) -> bool:
    """One call by the `temporal` CLI, one encoding for all its arguments (the CLI's rule): JSON as text, anything
    else base64-encoded. Whether the CLI sent it and was answered (it sends only valid JSON as json/plain)."""
    encoding = next((k.encoding for k in kinds if k.encoding is not None), "json/plain")
    as_text = encoding == "json/plain"
    inputs = [
        arg
        for k in kinds
        for arg in (
            "--input",
            k.data.decode(errors="surrogateescape") if as_text else base64.b64encode(k.data).decode(),
        )
    ]
    command = {"signal": ["workflow", "signal"], "update": ["workflow", "update", "execute"]}.get(
        kind_of_call, ["workflow", "query"]
    )
    args = [*command, "--workflow-id", workflow_id, "--name", name]
    args += [*([] if as_text else ["--input-base64"]), "--input-meta", f"encoding={encoding}", *inputs] if kinds else []
    done = await asyncio.to_thread(_temporal, *args, address=address)
    return done.returncode == 0


async def _from_another_sdk(
    temporal: Client, workflow_id: str, kind_of_call: str, name: str, kinds: list[Kind]
) -> UpdateWorkflowExecutionResponse | None:
    """One call as another SDK makes it on the wire: the payloads exactly as built, through the service's RPCs.
    An update's answer is returned (its outcome holds a refusal), unless the service refused it."""
    execution = WorkflowExecution(workflow_id=workflow_id)
    args = Payloads(payloads=[_payload(k) for k in kinds])
    service = temporal.workflow_service
    if kind_of_call == "signal":
        await service.signal_workflow_execution(
            SignalWorkflowExecutionRequest(
                namespace=temporal.namespace,
                workflow_execution=execution,
                signal_name=name,
                input=args,
                identity="another-sdk",
                request_id=str(uuid.uuid4()),
            )
        )
    elif kind_of_call == "update":
        with contextlib.suppress(RPCError):  # a refusal is an answer
            return await service.update_workflow_execution(
                UpdateWorkflowExecutionRequest(
                    namespace=temporal.namespace,
                    workflow_execution=execution,
                    wait_policy=WaitPolicy(
                        lifecycle_stage=UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED
                    ),
                    request=Request(
                        meta=Meta(update_id=str(uuid.uuid4()), identity="another-sdk"),
                        input=Input(name=name, args=args),
                    ),
                )
            )
    else:
        answered = await service.query_workflow(
            QueryWorkflowRequest(
                namespace=temporal.namespace, execution=execution, query=WorkflowQuery(query_type=name, query_args=args)
            )
        )
        assert answered.query_result.payloads, f"query {name} gave no answer"
    return None


def _encrypted_kinds(chance: random.Random) -> list[Kind]:
    """Payloads that claim `binary/encrypted` but that a worker holding `SEALING_KEY_ID` cannot open."""
    noise = bytes(chance.randrange(256) for _ in range(48))
    ours = ("encryption-key-id", SEALING_KEY_ID.encode())
    return [
        Kind("garbled under the worker's key", "binary/encrypted", noise, (ours,)),
        Kind("sealed with a key the worker lacks", "binary/encrypted", noise, (("encryption-key-id", b"retired"),)),
        Kind("encrypted without a key id", "binary/encrypted", noise, (("encryption-cipher", b"AES-256-GCM"),)),
        Kind("another cipher", "binary/encrypted", noise, (ours, ("encryption-cipher", b"ChaCha20-Poly1305"))),
        Kind("shorter than a nonce", "binary/encrypted", b"abc", (ours,)),
    ]


def _calls(
    seed: int, *, one_encoding_per_call: bool = False, encrypted: bool = False, count: int = CALLS
) -> list[tuple[str, str, list[Kind]]]:
    """`count` calls of random handlers with 0 to 4 random arguments; the CLI gives all of a call's arguments one
    encoding, so for it a call's arguments share the first one's. With `encrypted`, the kinds include payloads that
    claim to be encrypted but cannot be opened, for a worker that has keys."""
    chance = random.Random(seed)
    kinds = _kinds(chance) + (_encrypted_kinds(chance) if encrypted else [])
    handlers = [("signal", n) for n in SIGNALS] + [("update", n) for n in UPDATES] + [("query", n) for n in QUERIES]
    calls = []
    for _ in range(count):
        kind_of_call, name = chance.choice(handlers)
        first = chance.choice(kinds)
        alike = [k for k in kinds if k.encoding == first.encoding] if one_encoding_per_call else kinds
        calls.append((kind_of_call, name, [first, *(chance.choice(alike) for _ in range(chance.randint(0, 3)))]))
        if chance.random() < 0.15:  # no argument at all
            calls[-1] = (kind_of_call, name, [])
    return calls


async def _still_answers(session: SessionHandle, temporal: Client) -> None:
    handle = temporal.get_workflow_handle(session.run_id)
    answered = await session.send("are you still there?")
    assert answered.answer == "heard you", answered
    history = await handle.fetch_history()
    failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert not failed
    description = await handle.describe()
    assert description.raw_description.pending_workflow_task.attempt <= 1


def _shows_without_a_traceback(address: str, task_queue: str, run_id: str, *more: str) -> str:
    shown = subprocess.run(
        [*STALWART, "show", run_id, *more, "--address", address, "--task-queue", task_queue],
        capture_output=True,
        text=True,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert "Traceback" not in shown.stdout + shown.stderr, shown.stderr
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


@pytest.mark.slow
async def test_fuzz_handlers_from_the_temporal_cli_leave_the_session_answering(session, dev_env, task_queue):
    handle = dev_env.client.get_workflow_handle(session.run_id)
    for kind_of_call, name, kinds in _calls(seed=4301, one_encoding_per_call=True):
        sent = await _from_the_cli(dev_env.address, session.run_id, kind_of_call, name, kinds)
        if kind_of_call == "signal" and sent:
            await _no_failed_workflow_task_after_the_last_signal(handle)
    await _still_answers(session, dev_env.client)
    await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)


@pytest.mark.slow
async def test_fuzz_handlers_from_another_sdk_leave_the_session_answering(session, dev_env, task_queue):
    handle = dev_env.client.get_workflow_handle(session.run_id)
    for kind_of_call, name, kinds in _calls(seed=4302):
        await _from_another_sdk(dev_env.client, session.run_id, kind_of_call, name, kinds)
        if kind_of_call == "signal":
            await _no_failed_workflow_task_after_the_last_signal(handle)
    await _still_answers(session, dev_env.client)
    await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)


@pytest.mark.slow
async def test_a_message_signal_with_two_arguments_becomes_a_note_in_the_session(session, dev_env, task_queue):
    handle = dev_env.client.get_workflow_handle(session.run_id)
    await _from_another_sdk(dev_env.client, session.run_id, "signal", "message", [_kinds(random.Random(0))[0]] * 2)
    await _no_failed_workflow_task_after_the_last_signal(handle)
    state = await handle.query("state", result_type=RunState)
    events = await handle.query("events", result_type=list[RunEvent])
    shown = await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)
    assert [(e.event_type, e.content) for e in events if e.event_id.startswith("evt-note-")] == [
        ("error", state.notes[0].text)
    ]
    assert len(state.notes) == 1
    assert "`message` takes one argument" in state.notes[0].text and "it got 2 arguments" in state.notes[0].text
    assert "`message` takes one argument" in shown


@pytest.mark.slow
async def test_a_message_signal_with_a_lone_surrogate_is_a_note_and_show_reads_the_history(
    session, dev_env, task_queue
):
    handle = dev_env.client.get_workflow_handle(session.run_id)
    await _from_the_cli(dev_env.address, session.run_id, "signal", "message", [_kinds(random.Random(0))[6]])
    await _no_failed_workflow_task_after_the_last_signal(handle)
    state = await handle.query("state", result_type=RunState)
    await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)
    assert len(state.notes) == 1 and "`message`" in state.notes[0].text


@pytest.mark.slow
async def test_a_close_signal_with_arguments_it_does_not_take_still_closes_the_session(session, dev_env):
    kinds = _kinds(random.Random(0))
    await _from_another_sdk(dev_env.client, session.run_id, "signal", "close", [kinds[8], kinds[0]])
    handle = dev_env.client.get_workflow_handle(session.run_id, result_type=AgentResult)
    await _no_failed_workflow_task_after_the_last_signal(handle)
    last = (await handle.fetch_history()).events[-1]
    assert last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED  # closed by the task that read it
    result = await handle.result()
    assert result.stop_reason == "closed"


@pytest.mark.slow
async def test_show_reads_a_history_of_unusable_signals_while_no_worker_runs(client, dev_env, task_queue):
    """With no worker the state is rebuilt from the history: what the signals carried is shown as a placeholder or
    a note, never a traceback (a lone surrogate made pydantic's `Invalid JSON: unexpected end of hex escape`)."""
    session = await client.start_session(_session_agent(), session_id=f"fuzz-{uuid.uuid4().hex[:8]}")
    kinds = {kind.name: kind for kind in _kinds(random.Random(0))}
    try:
        for sent in (["text", "text"], ["lone surrogate"], ["invalid json"], ["encrypted without the key"], ["text"]):
            await _from_another_sdk(dev_env.client, session.run_id, "signal", "message", [kinds[k] for k in sent])
        shown = await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)
        events = await asyncio.to_thread(
            _shows_without_a_traceback, dev_env.address, task_queue, session.run_id, "--events"
        )
    finally:
        await dev_env.client.get_workflow_handle(session.run_id).terminate(reason="test over")
    assert "hello there" in shown  # the one usable message is read as one
    assert "ignored: message signal ignored: it takes one JSON string; it got 2 arguments" in shown
    assert shown.count("<undecodable payload: ") == 3, shown
    assert events.count(" error ") == 4 and "hello there" in events, events


def _stalwart(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*STALWART, *args], capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


@pytest.mark.slow
async def test_history_export_and_replay_read_a_session_that_was_sent_unusable_signals(
    session, dev_env, task_queue, tmp_path
):
    """A history holding whatever other clients sent (two arguments, a lone surrogate, invalid JSON, an unknown
    encoding) is exported and replays against this code without a divergence or a traceback."""
    kinds = {kind.name: kind for kind in _kinds(random.Random(0))}
    handle = dev_env.client.get_workflow_handle(session.run_id)
    for sent in (["text", "text"], ["lone surrogate"], ["invalid json"], ["unknown encoding"], ["text"]):
        await _from_another_sdk(dev_env.client, session.run_id, "signal", "message", [kinds[k] for k in sent])
        await _no_failed_workflow_task_after_the_last_signal(handle)
    await session.send("and now?")
    where = ["--address", dev_env.address, "--task-queue", task_queue]
    exported = await asyncio.to_thread(_stalwart, "history", "export", session.run_id, "-o", str(tmp_path), *where)
    replayed = await asyncio.to_thread(_stalwart, "replay", str(tmp_path), *where)
    assert exported.returncode == 0, exported.stderr
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


@pytest.mark.slow
async def test_fuzz_handlers_with_encrypted_garbage_leave_an_encrypting_session_answering(
    sealed_session, dev_env, task_queue
):
    """A worker with keys opens every payload before any handler runs: one it could not open failed every workflow
    task of the session."""
    session, temporal = sealed_session
    handle = temporal.get_workflow_handle(session.run_id)
    for kind_of_call, name, kinds in _calls(seed=4303, encrypted=True, count=CALLS // 2):
        await _from_another_sdk(temporal, session.run_id, kind_of_call, name, kinds)
        if kind_of_call == "signal":
            await _no_failed_workflow_task_after_the_last_signal(handle)
    await _still_answers(session, temporal)
    await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)


@pytest.mark.slow
async def test_message_signals_an_encrypting_worker_cannot_open_are_notes_naming_the_key(
    sealed_session, dev_env, task_queue
):
    session, temporal = sealed_session
    handle = temporal.get_workflow_handle(session.run_id)
    kinds = {kind.name: kind for kind in _encrypted_kinds(random.Random(0))}
    for sent in ("garbled under the worker's key", "sealed with a key the worker lacks"):
        await _from_another_sdk(temporal, session.run_id, "signal", "message", [kinds[sent]])
        await _no_failed_workflow_task_after_the_last_signal(handle)
    await _still_answers(session, temporal)
    state = await handle.query("state", result_type=RunState)
    shown = await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)
    garbled, unknown = (note.text for note in state.notes)
    assert "cannot open" in garbled and f"key {SEALING_KEY_ID!r} does not decrypt" in garbled, garbled
    assert "'retired'" in unknown and "add it to STALWART_ENCRYPTION_KEYS" in unknown, unknown
    assert SEALING_KEYS.split(":")[1] not in garbled + unknown
    assert "cannot open" in shown and "'retired'" in shown, shown


@pytest.mark.slow
async def test_a_send_update_an_encrypting_worker_cannot_open_is_refused_with_the_reason(sealed_session):
    session, temporal = sealed_session
    garbled = _encrypted_kinds(random.Random(0))[0]
    answer = await _from_another_sdk(temporal, session.run_id, "update", "send", [garbled])
    assert answer is not None and answer.outcome.HasField("failure")
    refusal = await temporal.data_converter.decode_failure(answer.outcome.failure)
    assert "`send` got a payload this worker cannot open" in str(refusal), refusal
    assert f"key {SEALING_KEY_ID!r} does not decrypt" in str(refusal), refusal
    await _still_answers(session, temporal)


@pytest.mark.slow
async def test_show_with_keys_reads_signals_it_cannot_open_while_no_worker_runs(dev_env, task_queue, monkeypatch):
    """Rebuilt from the history by a process with keys, a signal sealed with a key it lacks, or garbled, is shown
    as a placeholder saying why, never a traceback."""
    monkeypatch.setenv(KEYS_VAR, SEALING_KEYS)
    monkeypatch.delenv(KEY_FILE_VAR, raising=False)
    temporal = await connect(dev_env.address, from_config=False)
    session = await StalwartClient(temporal, task_queue=task_queue).start_session(
        _session_agent(), session_id=f"sealed-{uuid.uuid4().hex[:8]}"
    )
    kinds = {kind.name: kind for kind in _encrypted_kinds(random.Random(0))}
    try:
        for sent in ("garbled under the worker's key", "sealed with a key the worker lacks"):
            await _from_another_sdk(temporal, session.run_id, "signal", "message", [kinds[sent]])
        shown = await asyncio.to_thread(_shows_without_a_traceback, dev_env.address, task_queue, session.run_id)
    finally:
        await temporal.get_workflow_handle(session.run_id).terminate(reason="test over")
    assert shown.count("<undecodable payload: ") == 2, shown
    assert "'retired'" in shown and "does not decrypt" in shown, shown


NOT_JSON = [
    Kind("binary null", "binary/null", b""),
    Kind("utf-8 bytes", "binary/plain", b"hello as bytes"),
    Kind("bytes that are no text", "binary/plain", b"\xff\xfe\x00"),
    Kind("protobuf as json", "json/protobuf", b"{}", (("messageType", b"temporal.api.common.v1.Payload"),)),
    Kind("protobuf", "binary/protobuf", b"", (("messageType", b"temporal.api.common.v1.Payload"),)),
]
"""Arguments other SDKs send routinely (nil is `binary/null`), one at a time: their converters read them as `None`,
bytes or a protobuf message whatever type the handler asked for."""


@pytest.mark.slow
async def test_one_argument_that_is_not_json_is_refused_by_every_handler_and_the_session_goes_on(
    session, dev_env, task_queue
):
    handle = dev_env.client.get_workflow_handle(session.run_id)
    for kind in NOT_JSON:
        await _from_another_sdk(dev_env.client, session.run_id, "signal", "message", [kind])
        await _no_failed_workflow_task_after_the_last_signal(handle)
        for name in UPDATES:
            answered = await _from_another_sdk(dev_env.client, session.run_id, "update", name, [kind])
            assert answered is not None and answered.outcome.HasField("failure"), (name, kind.name)
            assert "not JSON" in answered.outcome.failure.message, (name, kind.name, answered.outcome.failure.message)
    state = await handle.query("state", result_type=RunState)
    assert len(state.notes) == len(NOT_JSON) and all("not JSON" in note.text for note in state.notes)
    await _still_answers(session, dev_env.client)
    assert [s.content for s in (await session.state()).steps if s.role == "user"] == ["are you still there?"]
