"""A payload the encryption codec cannot open becomes a marker saying why (contracts/undecodable.py): the codec never
raises for one, and the data converter raises `EncryptionKeyError` with that reason when something reads it."""

from __future__ import annotations

import base64
import os

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
