"""`stalwart codec-server`: the Temporal UI's codec contract over real HTTP, its origins and its token."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from stalwart.activities.storage import DRIVER_NAME, StorageConfig, storage_driver
from stalwart.activities.storage.converter import stalwart_converter
from stalwart.activities.storage.encryption import KEYS_VAR, EncryptionCodec, Keyring
from stalwart.client.codec_server import CodecService, running
from stalwart.workers.dev_server import free_port

UI = "http://localhost:8233"
KEYS = Keyring.parse(f"k1:{base64.b64encode(os.urandom(32)).decode()}")


def body(payloads: list[Payload]) -> dict:
    return json_format.MessageToDict(Payloads(payloads=payloads))


def values(answer: httpx.Response) -> list[object]:
    decoded = Payloads()
    json_format.ParseDict(answer.json(), decoded)
    return [json.loads(p.data) for p in decoded.payloads]


@pytest.fixture
async def codec_url(tmp_path: Path) -> AsyncIterator[str]:
    service = CodecService(
        codec=EncryptionCodec(KEYS),
        origins=[UI],
        drivers={DRIVER_NAME: storage_driver(StorageConfig(local_root=tmp_path))},
    )
    async with running(service, port=free_port()) as url:
        yield url


@pytest.fixture
async def token_url() -> AsyncIterator[str]:
    async with running(
        CodecService(codec=EncryptionCodec(KEYS), origins=[UI], token="s3cret"), port=free_port()
    ) as url:
        yield url


async def test_the_ui_origin_gets_payloads_decoded_with_cors_headers(codec_url: str):
    encrypted = await stalwart_converter(encryption=KEYS).encode(["the goal", {"answer": 42}])
    assert all(p.metadata["encoding"] == b"binary/encrypted" for p in encrypted)
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{codec_url}/decode", json=body(encrypted), headers={"Origin": UI, "X-Namespace": "default"}
        )
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == UI
    assert values(answer) == ["the goal", {"answer": 42}]
    assert answer.json()["payloads"][0]["metadata"]["encoding"] == base64.b64encode(b"json/plain").decode()


async def test_the_browser_preflight_is_answered_for_the_ui_origin_only(codec_url: str):
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-namespace"}
    async with httpx.AsyncClient() as http:
        allowed = await http.options(f"{codec_url}/decode", headers={"Origin": UI, **preflight})
        other = await http.options(f"{codec_url}/decode", headers={"Origin": "https://evil.example", **preflight})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == UI
    assert "x-namespace" in allowed.headers["access-control-allow-headers"].lower()
    assert other.status_code == 400
    assert "access-control-allow-origin" not in other.headers


async def test_a_page_of_another_origin_is_refused_even_without_a_preflight(codec_url: str):
    encrypted = await stalwart_converter(encryption=KEYS).encode(["the goal"])
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{codec_url}/decode", json=body(encrypted), headers={"Origin": "https://evil.example"}
        )
    assert answer.status_code == 403
    assert "access-control-allow-origin" not in answer.headers
    assert "the goal" not in answer.text


async def test_a_wrong_or_missing_token_is_refused_and_the_right_one_decodes(token_url: str):
    encrypted = await stalwart_converter(encryption=KEYS).encode(["the goal"])
    async with httpx.AsyncClient() as http:
        missing = await http.post(f"{token_url}/decode", json=body(encrypted), headers={"Origin": UI})
        wrong = await http.post(
            f"{token_url}/decode", json=body(encrypted), headers={"Origin": UI, "Authorization": "Bearer guess"}
        )
        right = await http.post(
            f"{token_url}/default/decode", json=body(encrypted), headers={"Authorization": "Bearer s3cret"}
        )
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert "Bearer" in missing.json()["error"] and "the goal" not in wrong.text
    assert missing.headers["access-control-allow-origin"] == UI, "the UI can read why it was refused"
    assert right.status_code == 200 and values(right) == ["the goal"]


async def test_the_token_scheme_is_read_without_regard_to_case_and_other_schemes_are_refused(token_url: str):
    """`Authorization: bearer <token>` is the same credential as `Bearer` (RFC 7235); `Basic` with the token is not."""
    encrypted = await stalwart_converter(encryption=KEYS).encode(["the goal"])
    async with httpx.AsyncClient() as http:
        answers = {
            header: await http.post(f"{token_url}/decode", json=body(encrypted), headers={"Authorization": header})
            for header in ("bearer s3cret", "BEARER  s3cret", "Basic s3cret", "s3cret", "Bearer s3cret extra")
        }
    assert {header: answer.status_code for header, answer in answers.items()} == {
        "bearer s3cret": 200,
        "BEARER  s3cret": 200,
        "Basic s3cret": 401,
        "s3cret": 401,
        "Bearer s3cret extra": 401,
    }
    assert values(answers["bearer s3cret"]) == ["the goal"]


async def test_encode_seals_what_the_ui_sends_and_decode_opens_it(codec_url: str):
    plain = await stalwart_converter().encode(["a signal from the UI"])
    async with httpx.AsyncClient() as http:
        encoded = await http.post(f"{codec_url}/encode", json=body(plain))
        sealed = Payloads()
        json_format.ParseDict(encoded.json(), sealed)
        assert sealed.payloads[0].metadata["encryption-key-id"] == b"k1"
        assert b"a signal" not in sealed.SerializeToString()
        decoded = await http.post(f"{codec_url}/decode", json=encoded.json())
    assert values(decoded) == ["a signal from the UI"]


async def test_a_payload_kept_in_external_storage_is_shown_decoded_not_as_a_reference(codec_url: str, tmp_path: Path):
    converter = stalwart_converter(storage=StorageConfig(local_root=tmp_path, threshold_bytes=0), encryption=KEYS)
    [reference] = await converter.encode(["a goal kept in storage"])
    assert b"a goal" not in reference.SerializeToString()
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{codec_url}/decode", json=body([reference]), headers={"Origin": UI})
    assert answer.status_code == 200 and values(answer) == ["a goal kept in storage"]


async def test_a_payload_sealed_with_an_unknown_key_is_shown_as_the_reason_beside_the_others_decoded(codec_url: str):
    """The UI asks for a whole event's payloads at once: one it cannot open made the request a 400, and the UI
    showed none of them."""
    other = Keyring.parse(f"retired:{base64.b64encode(os.urandom(32)).decode()}")
    [unknown] = await stalwart_converter(encryption=other).encode(["x"])
    [readable] = await stalwart_converter(encryption=KEYS).encode(["the goal"])
    garbled = Payload(metadata=dict(readable.metadata), data=b"\x00" * 40)
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{codec_url}/decode", json=body([readable, unknown, garbled]))
    assert answer.status_code == 200
    shown = values(answer)
    assert shown[0] == "the goal"
    assert isinstance(shown[1], str) and shown[1].startswith("<undecodable payload: ") and "'retired'" in shown[1]
    assert isinstance(shown[2], str) and "does not decrypt with the configured key" in shown[2]


@pytest.mark.slow
async def test_stalwart_dev_with_keys_points_its_web_ui_at_a_codec_server_it_runs(tmp_path: Path):
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    env = {**os.environ, KEYS_VAR: f"k1:{base64.b64encode(os.urandom(32)).decode()}", "XDG_STATE_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "stalwart.client.cli", "dev", "--port", str(port), "--ui-port", str(ui_port)]
    command += ["--codec-port", str(codec_port), "--data-dir", str(tmp_path / "data")]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stderr is not None
        lines = []
        while not any("A worker is running" in line for line in lines):
            line = await asyncio.to_thread(process.stderr.readline)
            assert line, f"stalwart dev ended: {''.join(lines)}"
            lines.append(line)
        assert any(f"codec server on port {codec_port}" in line for line in lines)
        async with httpx.AsyncClient() as http:
            settings = (await http.get(f"http://localhost:{ui_port}/api/v1/settings")).json()
            preflight = await http.options(
                f"http://localhost:{codec_port}/decode",
                headers={"Origin": f"http://localhost:{ui_port}", "Access-Control-Request-Method": "POST"},
            )
        assert settings["Codec"]["Endpoint"] == f"http://localhost:{codec_port}"
        assert preflight.headers["access-control-allow-origin"] == f"http://localhost:{ui_port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--port", "99999"], "99999 is not a port number: give one from 1 to 65535"),
        (["--port", "{busy}"], "cannot listen on 127.0.0.1:{busy} (Address already in use): choose another --port"),
        (["--host", "nohost.invalid"], "cannot listen on nohost.invalid:"),
        (["--origin", "*"], "'*' is not an origin"),
        (["--origin", "localhost:8080"], "'localhost:8080' is not an origin: write it as the browser sends it"),
        (["--origin", "http://localhost:8080/ui"], "'http://localhost:8080/ui' is not an origin"),
    ],
)
def test_a_port_host_or_origin_the_codec_server_cannot_use_is_one_error_line_before_it_claims_to_serve(
    arguments: list[str], said: str
):
    """Every browser request would be refused by an origin no browser sends; a port in use or out of range was a
    traceback, or a 'codec server on ...' line followed by uvicorn's own error."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        number = str(busy.getsockname()[1])
        arguments = [a.replace("{busy}", number) for a in arguments]
        if "--port" not in arguments:
            arguments += ["--port", str(free_port())]
        env = {**os.environ, KEYS_VAR: f"k1:{base64.b64encode(os.urandom(32)).decode()}"}
        process = subprocess.Popen(
            [sys.executable, "-m", "stalwart.client.cli", "codec-server", *arguments],
            env=env,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert process.stderr is not None
        said_lines = []
        for line in process.stderr:
            said_lines.append(line)
            if "codec server on" in line:  # it serves (and would until stopped): stop it, the test has failed
                process.terminate()
        stderr = "".join(said_lines)
        code = process.wait()
    assert code == 2, stderr
    assert said.replace("{busy}", number) in stderr, stderr
    assert "Traceback" not in stderr and "codec server on" not in stderr, stderr
