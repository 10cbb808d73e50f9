"""Payload encryption: AES-256-GCM over every payload a Stalwart client or worker writes.

On when keys are configured, for every process alike (the converter reads them):

    STALWART_ENCRYPTION_KEYS="2026-11:BASE64KEY,2026-05:OLDERKEY"   # the first key encrypts
    STALWART_ENCRYPTION_KEY_FILE=/run/secrets/stalwart-keys          # or the same list in a file, one per line

Each key is 32 random bytes in base64 (`openssl rand -base64 32`) under an id of your choice.
A payload records the id of the key that sealed it, so rotating is: put the new key first,
keep the old ones after it for as long as histories or stored objects sealed with them are read.

The codec runs before external storage (the SDK's order), so large payloads are sealed before
they are written to the storage bucket; `ObjectStore` seals the transcripts it keeps there too.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from stalwart.contracts import undecodable
from stalwart.contracts.errors import EncryptionKeyError

KEYS_VAR = "STALWART_ENCRYPTION_KEYS"
KEY_FILE_VAR = "STALWART_ENCRYPTION_KEY_FILE"

ENCODING = b"binary/encrypted"
CIPHER = b"AES-256-GCM"
KEY_ID_KEY = "encryption-key-id"
CIPHER_KEY = "encryption-cipher"
NONCE_BYTES = 12
SEALED_OBJECT_MAGIC = b"stalwart-sealed:v1\n"
"""Leads every object `ObjectStore` writes encrypted; objects without it were written before encryption was on."""

_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_FORMAT = (
    "write ID:BASE64KEY entries separated by commas or new lines, the encrypting key first, "
    "each key 32 random bytes in base64 (`openssl rand -base64 32`), e.g. "
    f'{KEYS_VAR}="k2:{base64.b64encode(bytes(32)).decode()}"'
)


@dataclass(frozen=True)
class Keyring:
    """Named AES-256 keys: the first encrypts, all of them decrypt."""

    keys: tuple[tuple[str, bytes], ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise EncryptionKeyError(f"no encryption keys: {_FORMAT}")
        seen: set[str] = set()
        for key_id, key in self.keys:
            if not _KEY_ID.fullmatch(key_id):
                raise EncryptionKeyError(
                    f"encryption key id {key_id!r} is not valid: use 1-64 letters, digits, '.', '_' or '-'"
                )
            if key_id in seen:
                raise EncryptionKeyError(f"encryption key id {key_id!r} is given twice: give each key its own id")
            if len(key) != 32:
                raise EncryptionKeyError(f"encryption key {key_id!r} is {len(key)} bytes; AES-256 needs 32: {_FORMAT}")
            seen.add(key_id)

    @property
    def encrypting_id(self) -> str:
        return self.keys[0][0]

    @property
    def ids(self) -> list[str]:
        return [key_id for key_id, _ in self.keys]

    def key(self, key_id: str) -> bytes | None:
        return next((key for known, key in self.keys if known == key_id), None)

    @classmethod
    def parse(cls, text: str, *, source: str = KEYS_VAR) -> Keyring:
        """Keys from `ID:BASE64KEY` entries separated by commas or new lines (`#` starts a comment line)."""
        keys: list[tuple[str, bytes]] = []
        lines = [line.strip() for line in text.splitlines()]
        entries = [e.strip() for line in lines if not line.startswith("#") for e in line.split(",")]
        for number, entry in enumerate((e for e in entries if e), start=1):
            key_id, colon, encoded = entry.partition(":")
            if not colon:  # likely a bare key: named by its place, never shown, not even in part
                raise EncryptionKeyError(f"{source}: entry {number} has no key id: {_FORMAT}")
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except (binascii.Error, ValueError):
                raise EncryptionKeyError(f"{source}: the key of {key_id.strip()!r} is not base64: {_FORMAT}") from None
            keys.append((key_id.strip(), key))
        try:
            return cls(tuple(keys))
        except EncryptionKeyError as err:
            raise EncryptionKeyError(f"{source}: {err}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Keyring | None:
        """The keys in `STALWART_ENCRYPTION_KEYS` or in the file `STALWART_ENCRYPTION_KEY_FILE` names; None if unset."""
        env = os.environ if environ is None else environ
        inline = env.get(KEYS_VAR, "").strip()
        file = env.get(KEY_FILE_VAR, "").strip()
        if inline and file:
            raise EncryptionKeyError(f"both {KEYS_VAR} and {KEY_FILE_VAR} are set: keep one of them")
        if file:
            path = Path(file).expanduser()
            try:
                text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not part of a key id
            except OSError as err:
                raise EncryptionKeyError(
                    f"{KEY_FILE_VAR}={file!r} cannot be read ({err.strerror or err}): point it at a readable file "
                    "of ID:BASE64KEY lines"
                ) from None
            except UnicodeDecodeError:  # raw key bytes (`openssl rand 32 > file`) instead of base64 text
                raise EncryptionKeyError(f"{KEY_FILE_VAR}={file!r} is not text (raw bytes?): {_FORMAT}") from None
            return cls.parse(text, source=f"{KEY_FILE_VAR} ({path})")
        if inline:
            return cls.parse(inline)
        return None

    def seal(self, plaintext: bytes, associated: bytes = b"") -> tuple[str, bytes]:
        """`plaintext` encrypted with the first key: its id, and nonce + ciphertext + tag."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key_id, key = self.keys[0]
        nonce = os.urandom(NONCE_BYTES)
        return key_id, nonce + AESGCM(key).encrypt(nonce, plaintext, key_id.encode() + associated)

    def open(self, key_id: str, sealed: bytes, associated: bytes = b"") -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key = self.key(key_id)
        if key is None:
            raise EncryptionKeyError(
                f"this data was encrypted with key {key_id!r}, which is not among the configured keys "
                f"({', '.join(self.ids)}): add it to {KEYS_VAR} (after the encrypting key) to read it; workers "
                "need every key a client seals with, so give the workers a new key before the clients"
            )
        try:
            return AESGCM(key).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], key_id.encode() + associated)
        except (InvalidTag, ValueError):  # ValueError: shorter than a nonce
            raise EncryptionKeyError(
                f"data sealed with key {key_id!r} does not decrypt with the configured key of that id: "
                "the key was changed under the same id, or the data was altered"
            ) from None

    def seal_object(self, data: bytes) -> bytes:
        """Bytes for a stored object: a marker, the key id, then the sealed data."""
        key_id, sealed = self.seal(data, b"object")
        return SEALED_OBJECT_MAGIC + key_id.encode() + b"\n" + sealed

    def open_object(self, data: bytes) -> bytes:
        """The inverse of `seal_object`; objects written before encryption was on come back unchanged."""
        if not data.startswith(SEALED_OBJECT_MAGIC):
            return data
        key_id, _, sealed = data[len(SEALED_OBJECT_MAGIC) :].partition(b"\n")
        return self.open(key_id.decode(errors="replace"), sealed, b"object")


def is_sealed_object(data: bytes) -> bool:
    return data.startswith(SEALED_OBJECT_MAGIC)


def is_encrypted(payload: Payload) -> bool:
    return payload.metadata.get("encoding") == ENCODING


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over each whole payload (data and metadata), the key id in the new payload's metadata.

    Payloads that are not encrypted pass through `decode` unchanged, so histories written before
    encryption was switched on stay readable.
    """

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encode_one(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decode_one(p) for p in payloads]

    def encode_one(self, payload: Payload) -> Payload:
        key_id, sealed = self.keyring.seal(payload.SerializeToString())
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID_KEY: key_id.encode(), CIPHER_KEY: CIPHER},
            data=sealed,
        )

    def decode_one(self, payload: Payload) -> Payload:
        """`payload` opened; one that cannot be opened becomes a marker saying why (contracts/undecodable.py).

        Never raises for a payload: the SDK decodes a workflow activation whole before any handler runs, so one
        signal a worker cannot open failed every workflow task of its session. What reads the marker decides."""
        if not is_encrypted(payload):
            return payload
        cipher = payload.metadata.get(CIPHER_KEY, CIPHER)
        if cipher != CIPHER:
            return undecodable.marker(
                f"a payload is encrypted with {_shown_id(cipher)!r}; Stalwart seals with AES-256-GCM only: "
                "send it through a client with the workers' STALWART_ENCRYPTION_KEYS"
            )
        if not payload.metadata.get(KEY_ID_KEY):
            return undecodable.marker(
                f"an encrypted payload names no key (its {KEY_ID_KEY!r} metadata is missing): it was not sealed by "
                "Stalwart's codec, or was altered; send it through a client with the workers' STALWART_ENCRYPTION_KEYS"
            )
        key_id = _shown_id(payload.metadata[KEY_ID_KEY])
        try:
            opened = self.keyring.open(key_id, payload.data)
        except EncryptionKeyError as err:
            return undecodable.marker(str(err))
        plain = Payload()
        try:
            plain.ParseFromString(opened)
        except DecodeError:
            return undecodable.marker(
                f"a payload sealed with key {key_id!r} decrypts, but to no payload: it was sealed by something other "
                "than Stalwart's codec; send it through a client with the workers' STALWART_ENCRYPTION_KEYS"
            )
        return plain


def _shown_id(value: bytes) -> str:
    """A key id or cipher name as read from a payload's metadata, which anyone may have written: printable, short."""
    text = value.decode(errors="backslashreplace")[:64]
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class ChainedCodec(PayloadCodec):
    """Several codecs as one: encoding runs them in order (e.g. compress, then encrypt), decoding in reverse."""

    def __init__(self, codecs: Sequence[PayloadCodec]) -> None:
        self.codecs = list(codecs)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        result = list(payloads)
        for codec in self.codecs:
            result = await codec.encode(result)
        return result

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        result = list(payloads)
        for codec in reversed(self.codecs):
            result = await codec.decode(result)
        return result


def encryption_codec(codec: PayloadCodec | None) -> EncryptionCodec | None:
    """The encryption codec inside `codec` (itself or one of a chain), if any."""
    if isinstance(codec, EncryptionCodec):
        return codec
    if isinstance(codec, ChainedCodec):
        return next((c for c in codec.codecs if isinstance(c, EncryptionCodec)), None)
    return None
