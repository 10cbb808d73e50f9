"""`stalwart codec-server`: the Temporal Web UI's (and CLI's) remote codec, so people allowed to see runs can read them.

The contract (docs.temporal.io, "Codec Server"): `POST /encode` and `POST /decode`, each taking and
answering `{"payloads": [...]}` in protobuf JSON (bytes as base64); the UI adds an `X-Namespace`
header and calls from the browser, so the server answers CORS for the UI's origin. Routes are
also served under a namespace segment (`/{namespace}/decode`) for the CLI's `--codec-endpoint`.

Decoding also resolves payloads kept in external storage (`STALWART_STORAGE`): the UI shows the
stored goal or tool result instead of a reference, decrypted like any other payload. A payload it cannot open
(a key it lacks, altered bytes) is answered as the text `<undecodable payload: REASON>`, the rest decoded.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import sys
from argparse import Namespace
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import uvicorn
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.converter import PayloadCodec, StorageDriver, StorageDriverClaim, StorageDriverRetrieveContext

from stalwart.activities.storage.config import DRIVER_NAME, StorageConfig, storage_driver
from stalwart.activities.storage.encryption import KEYS_VAR, EncryptionCodec, Keyring
from stalwart.client.listening import listening
from stalwart.contracts import undecodable
from stalwart.contracts.errors import ConfigurationError, UsageError

TOKEN_VAR = "STALWART_CODEC_TOKEN"
ORIGINS_VAR = "STALWART_CODEC_ORIGINS"
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
DEFAULT_PORT = 8234
MAX_BODY_BYTES = 64 * 1024 * 1024

_REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()
log = logging.getLogger("stalwart.codec_server")


@dataclass
class CodecService:
    """What the routes need: the codec, who may call, and the storage drivers references name."""

    codec: PayloadCodec
    origins: Sequence[str] = DEFAULT_ORIGINS
    token: str | None = None
    drivers: dict[str, StorageDriver] = field(default_factory=dict)

    def refusal(self, request: Request) -> Response | None:
        """A 403 for a browser page of another origin, a 401 without the token; None to go on."""
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.origins:
            return JSONResponse(
                {"error": f"origin {origin} may not use this codec server: add it with --origin"}, status_code=403
            )
        if self.token is not None:
            # The scheme is case-insensitive (RFC 7235): `bearer <token>` is the same credential.
            scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
                return JSONResponse(
                    {"error": "missing or wrong bearer token: send `Authorization: Bearer <token>`"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return None

    async def resolve(self, payloads: list[Payload]) -> list[Payload]:
        """Payloads kept in external storage replaced by what was stored (still encoded)."""
        resolved = []
        for payload in payloads:
            driver, claim = self._stored(payload)
            if driver is not None and claim is not None:
                [payload] = await driver.retrieve(StorageDriverRetrieveContext(), [claim])
            resolved.append(payload)
        return resolved

    def _stored(self, payload: Payload) -> tuple[StorageDriver | None, StorageDriverClaim | None]:
        if (
            payload.metadata.get("encoding") != b"json/protobuf"
            or payload.metadata.get("messageType") != _REFERENCE_TYPE
        ):
            return None, None
        reference = ExternalStorageReference()
        json_format.Parse(payload.data, reference, ignore_unknown_fields=True)
        driver = self.drivers.get(reference.driver_name)
        if driver is None:
            return None, None  # another store: shown as the reference it is
        return driver, StorageDriverClaim(claim_data=dict(reference.claim_data))


def codec_app(service: CodecService) -> Starlette:
    async def encode(request: Request) -> Response:
        return await _transform(request, service, decode=False)

    async def decode(request: Request) -> Response:
        return await _transform(request, service, decode=True)

    routes = [
        Route("/encode", encode, methods=["POST"]),
        Route("/decode", decode, methods=["POST"]),
        Route("/{namespace}/encode", encode, methods=["POST"]),
        Route("/{namespace}/decode", decode, methods=["POST"]),
    ]
    cors = Middleware(
        CORSMiddleware,
        allow_origins=list(service.origins),
        allow_methods=["POST"],
        allow_headers=["Content-Type", "X-Namespace", "Authorization"],
        allow_credentials=True,  # the UI may send its login's credentials with the request
        max_age=600,
    )
    return Starlette(routes=routes, middleware=[cors])


async def _transform(request: Request, service: CodecService, *, decode: bool) -> Response:
    refused = service.refusal(request)
    if refused is not None:
        return refused
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return JSONResponse({"error": f"body over {MAX_BODY_BYTES} bytes"}, status_code=413)
    payloads = Payloads()
    try:
        json_format.Parse(body, payloads, ignore_unknown_fields=True)
    except (json_format.ParseError, UnicodeDecodeError) as err:
        return JSONResponse(
            {"error": f'the body is not {{"payloads": [...]}} in protobuf JSON: {err}'}, status_code=400
        )
    items = list(payloads.payloads)
    try:
        if decode:
            items = [_shown(p) for p in await service.codec.decode(await service.resolve(items))]
        else:
            items = await service.codec.encode(items)
    except Exception as err:  # a key that is not configured, a payload altered: say which, keep serving
        log.warning("codec server could not %s: %s", "decode" if decode else "encode", err)
        return JSONResponse({"error": str(err)}, status_code=400)
    answer = json_format.MessageToDict(Payloads(payloads=items))
    return Response(json.dumps({"payloads": answer.get("payloads", [])}), media_type="application/json")


def _shown(payload: Payload) -> Payload:
    """`payload` as the UI shows it: one the codec could not open (contracts/undecodable.py) becomes the text
    saying why, as the CLI shows it, where the UI would show the marker's bytes in base64 (and the other payloads
    of the request are shown decoded, not refused with it)."""
    why = undecodable.reason(payload)
    if why is None:
        return payload
    text = undecodable.SHOWN.format(reason=why)
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())


def service_from_env(origins: Sequence[str] | None = None) -> CodecService:
    """The service for this process's settings: keys, storage, token and origins from the environment."""
    keyring = Keyring.from_env()
    if keyring is None:
        raise ConfigurationError(
            f"the codec server needs the encryption keys: set {KEYS_VAR} (or STALWART_ENCRYPTION_KEY_FILE) "
            "as for the workers"
        )
    if origins is None:
        configured = [o.strip().rstrip("/") for o in os.environ.get(ORIGINS_VAR, "").split(",") if o.strip()]
        origins = configured or DEFAULT_ORIGINS
    return CodecService(
        codec=EncryptionCodec(keyring),
        origins=[checked_origin(o) for o in origins],
        token=os.environ.get(TOKEN_VAR) or None,
        drivers={DRIVER_NAME: storage_driver(StorageConfig.from_env())},
    )


def checked_origin(origin: str) -> str:
    """`origin` as a browser sends it in its Origin header (`scheme://host[:port]`, no path), or a `UsageError`.

    Origins are compared as strings: one written otherwise (`localhost:8080`, `*`, a URL with a path) would
    match no browser, and the UI would be refused every request with nothing said at the start.
    """
    text = origin.strip().rstrip("/")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query or parts.fragment:
        hint = " (any origin would let every web page read your payloads)" if text == "*" else ""
        raise UsageError(
            f"{origin!r} is not an origin: write it as the browser sends it, scheme://host[:port] with no path, "
            f"e.g. http://localhost:8080 (--origin or {ORIGINS_VAR}){hint}"
        )
    return text


@asynccontextmanager
async def running(service: CodecService, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> AsyncIterator[str]:
    """The codec server serving in this event loop until the block ends; yields its URL."""
    listener = listening(host, port, server="the codec server", port_flag="--codec-port")
    server = uvicorn.Server(uvicorn.Config(codec_app(service), log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
        await asyncio.sleep(0.02)
    try:
        yield f"http://{'localhost' if host in ('127.0.0.1', '0.0.0.0') else host}:{port}"
    finally:
        server.should_exit = True
        await task


async def serve(args: Namespace) -> int:
    """Serve until stopped (the `stalwart codec-server` command)."""
    service = service_from_env(args.origin or None)
    listener = listening(args.host, args.port, server="the codec server")  # said before claiming to serve
    print(
        f"codec server on http://{args.host}:{args.port} for {', '.join(service.origins)}"
        f"{' (bearer token required)' if service.token else ''}; encrypting with key {service_key_id(service)!r}",
        file=sys.stderr,
    )
    config = uvicorn.Config(codec_app(service), log_level="warning", lifespan="off")
    await uvicorn.Server(config).serve(sockets=[listener])
    return 0


def service_key_id(service: CodecService) -> str:
    codec = service.codec
    keyring = getattr(codec, "keyring", None)
    return keyring.encrypting_id if keyring is not None else "?"
