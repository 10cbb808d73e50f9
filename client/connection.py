"""Connecting to Temporal with the settings every Stalwart process shares."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.envconfig import ClientConfigProfile
from temporalio.service import ConnectConfig, ServiceClient

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.contracts.errors import InfrastructureError
from stalwart.contracts.names import DEFAULT_ADDRESS, DEFAULT_NAMESPACE
from stalwart.contracts.tracing import tracing_wanted

if TYPE_CHECKING:  # the SDK's client is loaded by `connect`: `connect_service` is for commands that only read
    from temporalio.client import Client

DEFAULT_UI_URL = "http://localhost:8233"


class TemporalConnectionError(InfrastructureError, ConnectionError):
    """This process cannot connect to Temporal: the server does not answer, or the connection settings (address,
    profile, config file, TLS files) cannot be used. The message names the setting to fix."""


def default_address() -> str:
    return os.environ.get("TEMPORAL_ADDRESS", DEFAULT_ADDRESS)


def default_namespace() -> str:
    return os.environ.get("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE)


def connect_settings(
    address: str | None = None,
    namespace: str | None = None,
    *,
    profile: str | None = None,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`Client.connect` arguments from the settings the `temporal` CLI reads, explicit arguments first.

    `temporalio.envconfig` reads the profile (`profile`, else `TEMPORAL_PROFILE`, else `default`) of the
    config file (`config_file`, else `TEMPORAL_CONFIG_FILE`, else the standard
    `~/.config/temporalio/temporal.toml`), then the environment on top: `TEMPORAL_ADDRESS`,
    `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS_*` (client certificate and key,
    server CA, server name), `TEMPORAL_GRPC_META_*`. An API key turns TLS on.
    """
    env = dict(os.environ if environ is None else environ)
    named = (
        (str(config_file), "--config-file")
        if config_file
        else (env.get("TEMPORAL_CONFIG_FILE"), "TEMPORAL_CONFIG_FILE")
    )
    if named[0] and not Path(named[0]).expanduser().exists():  # the SDK reads a missing file as an empty one
        raise TemporalConnectionError(
            f"the Temporal config file {named[0]} does not exist: fix {named[1]}, or write its profiles with "
            "`temporal config set --profile NAME --prop address --value HOST:PORT`"
        )
    try:
        loaded = ClientConfigProfile.load(
            profile=profile or None,
            config_source=Path(config_file).expanduser() if config_file else None,
            override_env_vars=env,
        )
        settings: dict[str, Any] = dict(loaded.to_client_connect_config())
    except FileNotFoundError as err:
        raise TemporalConnectionError(
            f"a TLS file of the Temporal connection settings is missing: {err.filename}. Fix the path in "
            f"{_where(profile, config_file, env)}"
        ) from err
    except Exception as err:  # the SDK's bridge raises its own ConfigError (a bad profile name, bad TOML)
        if type(err).__name__ != "ConfigError":
            raise
        raise TemporalConnectionError(
            f"cannot read the Temporal connection settings ({err}) from {_where(profile, config_file, env)}: "
            "`temporal config list` shows the profiles the temporal CLI sees"
        ) from err
    tls = settings.get("tls")
    cert, key = getattr(tls, "client_cert", None), getattr(tls, "client_private_key", None)
    if bool(cert) != bool(key):  # the SDK refuses the half pair later, in words connect took for a bad address
        given, missing = ("certificate", "key") if cert else ("key", "certificate")
        raise TemporalConnectionError(
            f"the Temporal connection settings have a TLS client {given} without its {missing}: set both "
            "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (tls.client_cert_path and "
            f"tls.client_key_path in a profile), or neither, in {_where(profile, config_file, env)}"
        )
    settings["target_host"] = address or settings.get("target_host") or DEFAULT_ADDRESS
    settings["namespace"] = namespace or settings.get("namespace") or DEFAULT_NAMESPACE
    return settings


def _where(profile: str | None, config_file: str | os.PathLike[str] | None, env: Mapping[str, str]) -> str:
    file = config_file or env.get("TEMPORAL_CONFIG_FILE") or "~/.config/temporalio/temporal.toml"
    name = profile or env.get("TEMPORAL_PROFILE") or "default"
    return f"profile {name!r} of {file} and the TEMPORAL_* environment variables"


async def connect(
    address: str | None = None,
    namespace: str | None = None,
    *,
    profile: str | None = None,
    config_file: str | os.PathLike[str] | None = None,
    from_config: bool = True,
    metrics_port: int | str | None = None,
) -> Client:
    """A Temporal client with Stalwart's data converter, for any cluster the `temporal` CLI can reach.

    Address, namespace, API key and TLS come from `connect_settings` (TEMPORAL_* variables and
    the temporal CLI's config profile); `address` and `namespace` override them. With
    `from_config=False` (an embedded dev server) nothing is read: plain `address`, `namespace`.
    With `metrics_port`, the client (and the workers built on it) runs on an SDK runtime serving Prometheus
    metrics there. When the process traces (`OTEL_EXPORTER_OTLP_ENDPOINT`), the client carries the current
    trace context into the runs it starts, so a run's spans join the caller's trace.
    """
    # Made first, outside the connect call's error handling: a bad STALWART_* key or storage setting names its
    # variable, not the Temporal address.
    converter = stalwart_converter()
    if from_config:
        settings = connect_settings(address, namespace, profile=profile, config_file=config_file)
    else:
        settings = {"target_host": address or DEFAULT_ADDRESS, "namespace": namespace or DEFAULT_NAMESPACE}
    if _telemetry_in_use(metrics_port):
        from stalwart.workers import telemetry  # OpenTelemetry: only a process that traces or serves metrics

        if metrics_port is not None:
            settings["runtime"] = telemetry.metrics_runtime(metrics_port)
        if telemetry.enable_tracing():
            settings["interceptors"] = [*settings.get("interceptors", ()), *telemetry.tracing_interceptors()]
    from temporalio.client import Client  # not for `connect_service`'s commands: about 90 ms of their start

    try:
        return await Client.connect(**settings, data_converter=converter)
    except (RuntimeError, ValueError) as err:
        raise _unreachable(settings, err) from err


async def connect_service(
    address: str | None = None,
    namespace: str | None = None,
    *,
    profile: str | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> tuple[ServiceClient, str]:
    """The service client under `connect`'s, with the same settings, and the namespace: all a command that only
    reads runs needs (`client/reader.py`), without the cost of importing the SDK's `Client`."""
    settings = connect_settings(address, namespace, profile=profile, config_file=config_file)
    namespace = settings.pop("namespace")
    try:  # the identity `Client.connect` would give: the server records it on what this process does
        service = await ServiceClient.connect(
            ConnectConfig(**settings, identity=f"{os.getpid()}@{socket.gethostname()}")
        )
    except (RuntimeError, ValueError) as err:
        raise _unreachable({**settings, "namespace": namespace}, err) from err
    return service, namespace


def _unreachable(settings: Mapping[str, Any], err: Exception) -> TemporalConnectionError:
    target = settings["target_host"]
    if isinstance(err, ValueError):  # the SDK's bridge refuses an address it cannot parse ("invalid port number")
        return TemporalConnectionError(
            f"the Temporal address {target!r} is not HOST:PORT ({err}): give one such as localhost:7233 "
            "(--address or TEMPORAL_ADDRESS)"
        )
    secured = " with TLS" if settings.get("tls") else ""
    portless = ":" not in target.rsplit("]", 1)[-1]  # no port: the connection went to the scheme's default (80)
    port_hint = f" (no port was given: Temporal's is usually 7233, {target}:7233)" if portless else ""
    return TemporalConnectionError(
        f"cannot reach Temporal at {target}{secured}{port_hint} (namespace {settings['namespace']}): {err}. "
        "Start one with `stalwart dev`, or point TEMPORAL_ADDRESS (or a temporal CLI profile: TEMPORAL_PROFILE) "
        "at your server."
    )


def ui_base(address: str | None, ui_url: str | None = None) -> str:
    """The Web UI that links to runs point at: `ui_url`, else TEMPORAL_UI_URL, else the UI `stalwart dev` recorded
    for the server at `address`, else the dev server's default."""
    recorded = dev_ui_url(address) if address else None
    return (ui_url or os.environ.get("TEMPORAL_UI_URL") or recorded or DEFAULT_UI_URL).rstrip("/")


def _dev_ui_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "stalwart" / "dev-ui-urls.json"


def _server_key(address: str) -> str:
    """Addresses of one local server compare equal: 127.0.0.1:7233, localhost:7233 ..."""
    host, _, port = address.rpartition(":")
    return f"local:{port}" if host.strip("[]") in _LOCAL_HOSTS else address


_LOCAL_HOSTS = {"127.0.0.1", "localhost", "0.0.0.0", "::1", ""}


def _read_dev_ui_urls() -> dict[str, str]:
    try:
        urls = json.loads(_dev_ui_file().read_text())
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in urls.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(urls, dict) else {}
    )


def _write_dev_ui_urls(urls: dict[str, str]) -> None:
    path = _dev_ui_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(urls, indent=1))
        temporary.replace(path)
    except OSError:
        pass  # only a convenience: the link then falls back to TEMPORAL_UI_URL or the default port


def record_dev_ui_url(address: str, ui_url: str | None) -> None:
    """Remember the Web UI of the dev server `stalwart dev` started at `address`, for links printed elsewhere."""
    urls = _read_dev_ui_urls()
    if ui_url:
        urls[_server_key(address)] = ui_url
    else:
        urls.pop(_server_key(address), None)
    _write_dev_ui_urls(urls)


def dev_ui_url(address: str) -> str | None:
    """The Web UI of the dev server `stalwart dev` runs at `address`, if one was recorded."""
    return _read_dev_ui_urls().get(_server_key(address))


def _telemetry_in_use(metrics_port: object) -> bool:
    """Whether this client needs `workers.telemetry` (which loads the worker SDK): it serves metrics, the
    environment asks for traces, or tracing is on in this process already (a tracer provider given to the plugin)."""
    return metrics_port is not None or tracing_wanted() or "stalwart.workers.telemetry" in sys.modules
