"""Any cluster: clients, workers and the CLI connect with the settings the `temporal` CLI reads (temporalio.envconfig).

`temporal server start-dev` cannot serve TLS (its --help has no TLS option), so the mTLS test puts
a TLS-terminating proxy that requires a client certificate in front of a real dev server.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from temporalio.client import Client
from temporalio.service import ConnectConfig, ServiceClient, TLSConfig

from stalwart.client import connection
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect, connect_settings
from stalwart.workers.dev_server import DevServer, free_port

CLEAN = {"HOME": "/nonexistent"}  # no ~/.config/temporalio/temporal.toml of the machine's user


# -- certificates --------------------------------------------------------------


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    stranger_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return path


def _cert(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name | None,
    signer: ec.EllipticCurvePrivateKey,
    **kind: Any,
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer or subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=kind.get("ca", False), path_length=None), critical=True)
    )
    if kind.get("ca"):
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    if kind.get("server"):
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(signer, hashes.SHA256())


def make_pki(folder: Path) -> Pki:
    def pem(cert: x509.Certificate, name: str) -> Path:
        (folder / name).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return folder / name

    ca_key, server_key, client_key, stranger_key = _key(), _key(), _key(), _key()
    ca = _cert("stalwart test CA", ca_key, None, ca_key, ca=True)
    stranger_ca_key = _key()
    stranger_ca = _cert("another CA", stranger_ca_key, None, stranger_ca_key, ca=True)
    return Pki(
        ca=pem(ca, "ca.pem"),
        server_cert=pem(_cert("localhost", server_key, ca.subject, ca_key, server=True), "server.pem"),
        server_key=_write_key(server_key, folder / "server.key"),
        client_cert=pem(_cert("stalwart worker", client_key, ca.subject, ca_key), "client.pem"),
        client_key=_write_key(client_key, folder / "client.key"),
        stranger_cert=pem(_cert("stranger", stranger_key, stranger_ca.subject, stranger_ca_key), "stranger.pem"),
        stranger_key=_write_key(stranger_key, folder / "stranger.key"),
    )


@contextlib.asynccontextmanager
async def mtls_proxy(pki: Pki, upstream_port: int) -> AsyncIterator[int]:
    """Terminates TLS, requiring a client certificate signed by the test CA, and forwards to the dev server."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.load_verify_locations(pki.ca)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError, asyncio.CancelledError):
            pass  # one side went away, or the proxy is closing: end this direction
        finally:
            writer.close()

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def profile_file(folder: Path, pki: Pki, address: str, *, cert: Path | None = None, key: Path | None = None) -> Path:
    path = folder / "temporal.toml"
    path.write_text(
        f"""
[profile.default]
address = "localhost:1"

[profile.prod]
address = "{address}"
namespace = "default"

[profile.prod.tls]
client_cert_path = "{cert or pki.client_cert}"
client_key_path = "{key or pki.client_key}"
server_ca_cert_path = "{pki.ca}"
server_name = "localhost"
"""
    )
    return path


# -- settings ------------------------------------------------------------------


def test_a_profile_with_an_api_key_and_tls_files_becomes_the_sdks_connect_arguments(tmp_path: Path, pki: Pki):
    config = tmp_path / "temporal.toml"
    config.write_text(
        f"""
[profile.cloud]
address = "my-ns.a1b2c.tmprl.cloud:7233"
namespace = "my-ns.a1b2c"
api_key = "the-api-key"

[profile.cloud.tls]
client_cert_path = "{pki.client_cert}"
client_key_path = "{pki.client_key}"
server_ca_cert_path = "{pki.ca}"
server_name = "my-ns.a1b2c.tmprl.cloud"
"""
    )
    settings = connect_settings(environ={**CLEAN, "TEMPORAL_CONFIG_FILE": str(config), "TEMPORAL_PROFILE": "cloud"})
    assert settings["target_host"] == "my-ns.a1b2c.tmprl.cloud:7233"
    assert settings["namespace"] == "my-ns.a1b2c"
    assert settings["api_key"] == "the-api-key"
    tls = settings["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.client_cert == pki.client_cert.read_bytes()
    assert tls.client_private_key == pki.client_key.read_bytes()
    assert tls.server_root_ca_cert == pki.ca.read_bytes()
    assert tls.domain == "my-ns.a1b2c.tmprl.cloud"


def test_environment_variables_alone_are_enough_and_explicit_arguments_win(pki: Pki):
    env = {
        **CLEAN,
        "TEMPORAL_ADDRESS": "prod.example:7233",
        "TEMPORAL_NAMESPACE": "agents",
        "TEMPORAL_API_KEY": "k",
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client_cert),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki.client_key),
    }
    settings = connect_settings(environ=env)
    assert (settings["target_host"], settings["namespace"], settings["api_key"]) == ("prod.example:7233", "agents", "k")
    assert settings["tls"].client_cert == pki.client_cert.read_bytes()
    overridden = connect_settings("other:7233", "elsewhere", environ=env)
    assert (overridden["target_host"], overridden["namespace"]) == ("other:7233", "elsewhere")
    assert overridden["api_key"] == "k", "--address overrides the address only, as with the temporal CLI"
    assert connect_settings(environ=CLEAN) == {"target_host": "localhost:7233", "namespace": "default"}
    with_key_only = connect_settings(environ={**CLEAN, "TEMPORAL_API_KEY": "k"})
    assert with_key_only["tls"] is True, "an API key turns TLS on (Temporal Cloud)"


def test_bad_settings_say_where_they_came_from_and_what_to_do(tmp_path: Path, pki: Pki):
    config = profile_file(tmp_path, pki, "localhost:1", cert=tmp_path / "gone.pem")
    with pytest.raises(ConnectionError, match="TLS file .* is missing: .*gone.pem. Fix the path in profile 'prod'"):
        connect_settings(profile="prod", config_file=config, environ=CLEAN)
    with pytest.raises(ConnectionError, match="Profile 'nope' not found.*temporal config list"):
        connect_settings(profile="nope", config_file=config, environ=CLEAN)


class _Recorded(Exception):
    """Raised by a recording connect: prod.example does not exist, what matters is what the SDK was asked."""


@pytest.fixture
def prod_profile(tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config file whose profile `prod` names prod.example with mTLS, the API key from the environment, and no
    other TEMPORAL_* variable or home config in the way."""
    for name in [n for n in os.environ if n.startswith("TEMPORAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.setenv("TEMPORAL_API_KEY", "from-env")
    return profile_file(tmp_path, pki, "prod.example:7233")


async def test_the_settings_reach_the_sdks_connect_call_with_stalwarts_converter(
    prod_profile: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
):
    seen: dict[str, Any] = {}

    async def recording_connect(**kwargs: Any) -> Client:
        seen.update(kwargs)
        raise _Recorded

    monkeypatch.setattr(Client, "connect", recording_connect)
    with pytest.raises(_Recorded):
        await StalwartClient.connect(namespace="agents", profile="prod", config_file=prod_profile)
    assert seen["target_host"] == "prod.example:7233"
    assert seen["namespace"] == "agents"
    assert seen["api_key"] == "from-env"
    assert seen["tls"].client_cert == pki.client_cert.read_bytes() and seen["tls"].domain == "localhost"
    assert "PydanticPayloadConverter" in seen["data_converter"].payload_converter_class.__name__


async def test_the_settings_reach_the_service_client_of_a_command_that_only_reads(
    prod_profile: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
):
    """`stalwart show` connects with the service client alone (client/reader.py): the same profile, TLS and key."""
    seen: list[ConnectConfig] = []

    async def recording_connect(config: ConnectConfig) -> ServiceClient:
        seen.append(config)
        raise _Recorded

    monkeypatch.setattr(ServiceClient, "connect", recording_connect)
    with pytest.raises(_Recorded):
        await connection.connect_service(namespace="agents", profile="prod", config_file=prod_profile)
    [connected] = seen
    assert (connected.target_host, connected.api_key) == ("prod.example:7233", "from-env")
    assert isinstance(connected.tls, TLSConfig) and connected.tls.client_cert == pki.client_cert.read_bytes()
    assert connected.tls.domain == "localhost" and connected.identity


# -- mTLS end to end -----------------------------------------------------------


@pytest.fixture(scope="module")
async def tls_dev_server(pki: Pki) -> AsyncIterator[int]:
    async with DevServer(port=None, ui_port=None) as server:
        assert server.port is not None
        async with mtls_proxy(pki, server.port) as port:
            yield port


@pytest.mark.slow
async def test_a_client_with_the_profiles_client_certificate_talks_to_a_server_that_requires_mtls(
    tls_dev_server: int, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HOME", "/nonexistent")
    config = profile_file(tmp_path, pki, f"localhost:{tls_dev_server}")
    client = await connect(profile="prod", config_file=config)
    assert await client.service_client.check_health()
    assert client.service_client.config.tls, "the connection is TLS"

    stranger = profile_file(tmp_path, pki, f"localhost:{tls_dev_server}", cert=pki.stranger_cert, key=pki.stranger_key)
    with pytest.raises(ConnectionError, match=f"cannot reach Temporal at localhost:{tls_dev_server} with TLS"):
        await connect(profile="prod", config_file=stranger)
    with pytest.raises(RuntimeError, match="Failed client connect"):
        await Client.connect(f"localhost:{tls_dev_server}")  # plaintext to a TLS port


@pytest.mark.slow
async def test_the_cli_and_a_worker_run_an_agent_over_mtls_with_a_profile(
    tls_dev_server: int, pki: Pki, tmp_path: Path
):
    config = profile_file(tmp_path, pki, f"localhost:{tls_dev_server}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    env |= {"HOME": str(tmp_path), "TEMPORAL_CONFIG_FILE": str(config), "TEMPORAL_PROFILE": "prod"}
    env["STALWART_STORAGE"] = str(tmp_path / "storage")
    queue = f"mtls-{free_port()}"
    stalwart = [sys.executable, "-m", "stalwart.client.cli"]
    worker = subprocess.Popen([*stalwart, "worker", "--task-queue", queue], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stderr is not None
        first = await asyncio.to_thread(worker.stderr.readline)
        while "worker polling" not in first:
            assert first, "the worker exited"
            first = await asyncio.to_thread(worker.stderr.readline)
        assert f"localhost:{tls_dev_server}" in first
        agent = Path(__file__).parent.parent / "agents" / "calculator.toml"
        run = await asyncio.to_thread(
            subprocess.run,
            [*stalwart, "run", str(agent), "What is 17 * 23 + 4?", "--task-queue", queue, "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        assert '"stop_reason": "done"' in run.stdout and "395" in run.stdout
    finally:
        worker.terminate()
        await asyncio.to_thread(worker.wait)  # the proxy runs in this loop: the worker's last calls go through it


@pytest.mark.parametrize("command", [["runs"], ["show", "some-run"]])
@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("STALWART_ENCRYPTION_KEYS", "k1:not base64!", "STALWART_ENCRYPTION_KEYS: the key of 'k1' is not base64"),
        ("STALWART_STORAGE", "ftp://x", "STALWART_STORAGE='ftp://x' is not a storage location"),
    ],
)
def test_a_bad_key_or_storage_setting_is_named_not_blamed_on_the_temporal_address(
    variable: str, value: str, said: str, command: list[str]
):
    """The converter is made from STALWART_* settings before connecting; its error is not an address error."""
    env = {**os.environ, **CLEAN, "TEMPORAL_ADDRESS": "localhost:1", variable: value}
    env.pop("STALWART_ENCRYPTION_KEY_FILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "stalwart.client.cli", *command], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and "Temporal address" not in done.stderr, done.stderr


def test_a_config_file_named_but_not_there_is_said_not_ignored(tmp_path: Path):
    """A mistyped --config-file (or TEMPORAL_CONFIG_FILE) connected to localhost:7233 with no word of the file."""
    missing = tmp_path / "temporal.tml"
    with pytest.raises(ConnectionError, match=r"config file .*temporal\.tml does not exist.*--config-file"):
        connect_settings(config_file=missing, environ=CLEAN)
    with pytest.raises(ConnectionError, match=r"config file .*temporal\.tml does not exist.*TEMPORAL_CONFIG_FILE"):
        connect_settings(environ={**CLEAN, "TEMPORAL_CONFIG_FILE": str(missing)})


def test_a_client_certificate_without_its_key_is_said_as_such_not_as_a_bad_address(pki: Pki):
    """The SDK refuses the pair half given with a ValueError, which connect took for an address it cannot parse."""
    env = {**CLEAN, "TEMPORAL_ADDRESS": "localhost:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client_cert)}
    with pytest.raises(ConnectionError, match=r"client certificate without its key.*TEMPORAL_TLS_CLIENT_KEY_PATH"):
        connect_settings(environ=env)
    env = {**CLEAN, "TEMPORAL_ADDRESS": "localhost:7233", "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pki.client_key)}
    with pytest.raises(ConnectionError, match=r"client key without its certificate.*TEMPORAL_TLS_CLIENT_CERT_PATH"):
        connect_settings(environ=env)
