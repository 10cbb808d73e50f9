"""A payload the encryption codec cannot open becomes a marker saying why (contracts/undecodable.py): the codec never
raises for one, and the data converter raises `EncryptionKeyError` with that reason when something reads it."""

from __future__ import annotations

import asyncio
import base64
import os
import uuid

import pytest
from temporalio.api.common.v1 import Payload

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.activities.storage.encryption import (
    CIPHER_KEY,
    KEY_ID_KEY,
    KEYS_VAR,
    EncryptionCodec,
    EncryptionKeyError,
    Keyring,
)
from stalwart.contracts import undecodable
from stalwart.contracts.messages import ToolResult

KEY = base64.b64encode(os.urandom(32)).decode()
KEYS = Keyring.parse(f"k1:{KEY}")
NOISE = os.urandom(48)


def _encrypted(data: bytes = NOISE, **metadata: bytes) -> Payload:
    return Payload(metadata={"encoding": b"binary/encrypted", **metadata}, data=data)


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        (_encrypted(**{KEY_ID_KEY: b"k1"}), "data sealed with key 'k1' does not decrypt with the configured key"),
        (_encrypted(**{KEY_ID_KEY: b"retired"}), "key 'retired', which is not among the configured keys (k1): add"),
        (_encrypted(**{CIPHER_KEY: b"AES-256-GCM"}), "names no key"),
        (_encrypted(**{KEY_ID_KEY: b"k1", CIPHER_KEY: b"ChaCha20"}), "encrypted with 'ChaCha20'; Stalwart seals with"),
        (_encrypted(b"abc", **{KEY_ID_KEY: b"k1"}), "data sealed with key 'k1' does not decrypt"),
        (_encrypted(**{KEY_ID_KEY: b"k1\x1b[2J"}), "[2J', which is not among"),
    ],
    ids=["garbled", "unknown key", "no key id", "another cipher", "shorter than a nonce", "control characters"],
)
def test_a_payload_the_codec_cannot_open_becomes_a_marker_saying_why(payload: Payload, said: str):
    marker = EncryptionCodec(KEYS).decode_one(payload)
    reason = undecodable.reason(marker)
    assert reason is not None and said in reason, reason
    assert reason.isprintable()  # what the payload's metadata says is untrusted: no control characters pass
    assert KEY.encode() not in marker.SerializeToString() and base64.b64decode(KEY) not in marker.SerializeToString()


def test_the_reason_for_an_unknown_key_says_to_give_the_workers_the_key_first():
    reason = undecodable.reason(EncryptionCodec(KEYS).decode_one(_encrypted(**{KEY_ID_KEY: b"retired"})))
    assert reason is not None and f"add it to {KEYS_VAR}" in reason and "give the workers a new key before" in reason


def test_a_payload_that_opens_is_not_a_marker():
    codec = EncryptionCodec(KEYS)
    sealed = codec.encode_one(Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"'))
    assert undecodable.reason(codec.decode_one(sealed)) is None
    assert undecodable.reason(Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"')) is None


async def test_an_activity_result_the_worker_cannot_open_fails_its_reader_with_the_reason():
    """An activity result, a workflow input or a query argument the worker cannot open still fails what reads it
    (a workflow task then fails and is retried, so a worker that has the key can take it), saying why."""
    unknown = _encrypted(**{KEY_ID_KEY: b"retired"})
    with pytest.raises(EncryptionKeyError, match=r"key 'retired'.*not among the configured keys.*STALWART_ENCRYPTION"):
        await stalwart_converter(encryption=KEYS).decode([unknown], [ToolResult])


@pytest.mark.parametrize("workers_keys", [None, "k2"], ids=["no key at all", "another key"])
async def test_a_run_sealed_with_a_key_its_worker_lacks_waits_for_a_worker_that_has_it(dev_env, workers_keys):
    """Its workflow task fails (and is retried), naming the missing key's error: the run neither fails as an
    invalid input nor ends, so a worker given the key runs it."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client, WorkflowExecutionStatus

    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.names import WORKFLOW_TYPE
    from stalwart.contracts.run_input import RunInput
    from stalwart.workers.worker import build_worker

    queue = f"sealed-{uuid.uuid4().hex[:8]}"
    starter = await Client.connect(dev_env.address, data_converter=stalwart_converter(encryption=KEYS))
    workers = Keyring.parse(f"{workers_keys}:{base64.b64encode(os.urandom(32)).decode()}") if workers_keys else None
    worker_client = await Client.connect(dev_env.address, data_converter=stalwart_converter(encryption=workers))
    async with build_worker(worker_client, task_queue=queue):
        handle = await starter.start_workflow(
            WORKFLOW_TYPE, RunInput(agent=AgentSpec(name="sealed"), goal="sealed with k1"), id=queue, task_queue=queue
        )
        failed, description = [], await handle.describe()
        while not failed and description.status == WorkflowExecutionStatus.RUNNING:
            events = (await handle.fetch_history()).events
            failed = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
            description = await handle.describe()
            await asyncio.sleep(0.05)
        if description.status == WorkflowExecutionStatus.RUNNING:
            await handle.terminate(reason="test over")
    assert description.status == WorkflowExecutionStatus.RUNNING, "the run ended instead of waiting for a worker"
    expected = "MissingEncryptionKey" if workers_keys is None else "EncryptionKeyError"
    assert failed[0].workflow_task_failed_event_attributes.failure.application_failure_info.type == expected


def test_show_names_the_key_error_under_the_sdks_failed_decoding_of_an_activity_result():
    """An activity result the worker cannot open fails its workflow task as the SDK's RuntimeError("Failed decoding
    arguments"), the key's error its cause: show's hint to give the workers the key reads the cause."""
    from temporalio.api.failure.v1 import ApplicationFailureInfo, Failure
    from temporalio.api.history.v1 import HistoryEvent, WorkflowTaskFailedEventAttributes

    from stalwart.client.task_failures import failed_task, failing_task_note

    cause = Failure(message="key", application_failure_info=ApplicationFailureInfo(type="EncryptionKeyError"))
    failure = Failure(
        message="Failed decoding arguments", application_failure_info=ApplicationFailureInfo(type="RuntimeError")
    )
    failure.cause.CopyFrom(cause)
    event = HistoryEvent(workflow_task_failed_event_attributes=WorkflowTaskFailedEventAttributes(failure=failure))
    kind = failed_task([event])
    assert kind == "EncryptionKeyError"
    assert "give the workers the key" in failing_task_note(kind)
