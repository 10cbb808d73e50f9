"""Connecting to Temporal with the settings every Stalwart process shares."""

from __future__ import annotations

import json
import os
from pathlib import Path

from temporalio.client import Client

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.contracts.names import DEFAULT_ADDRESS, DEFAULT_NAMESPACE


def default_address() -> str:
    return os.environ.get("TEMPORAL_ADDRESS", DEFAULT_ADDRESS)


def default_namespace() -> str:
    return os.environ.get("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE)


async def connect(address: str | None = None, namespace: str | None = None) -> Client:
    """A Temporal client with Stalwart's data converter;
    address and namespace default to TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE."""
    address = address or default_address()
    try:
        return await Client.connect(
            address, namespace=namespace or default_namespace(), data_converter=stalwart_converter()
        )
    except RuntimeError as err:
        raise ConnectionError(
            f"cannot reach Temporal at {address}: {err}. Start one with `stalwart dev`, "
            f"or point TEMPORAL_ADDRESS at your server."
        ) from err


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
