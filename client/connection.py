"""Connecting to Temporal with the settings every Stalwart process shares."""

from __future__ import annotations

import os

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
