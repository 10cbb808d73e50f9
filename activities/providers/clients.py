"""The SDK clients of one worker, kept across model turns.

A new `AsyncOpenAI` or `AsyncAnthropic` per turn costs its construction
(milliseconds of Python) and a new connection, with a TLS handshake, to a
provider the worker will call again a moment later. A worker keeps one
client per SDK, API key, base URL and read timeout instead, and closes
them all when it stops (`StalwartPlugin`). The clients never
retry (`max_retries=0`): Temporal owns every retry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

import httpx2

CONNECT_SECONDS = 10.0


class SdkClient(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=SdkClient)


class SdkClients:
    """One worker's SDK clients, made on first use and closed together."""

    def __init__(self) -> None:
        self._clients: dict[tuple[Any, ...], SdkClient] = {}

    def get(self, sdk_client: type[ClientT], *, api_key: str, base_url: str | None, read_seconds: float) -> ClientT:
        """The worker's client of `sdk_client` for this key, URL and read timeout; made now if it is the first."""
        key = (sdk_client, api_key, base_url, read_seconds)
        client = self._clients.get(key)
        if client is None:
            timeout = httpx2.Timeout(read_seconds, connect=CONNECT_SECONDS)
            client = self._clients[key] = sdk_client(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)  # type: ignore[call-arg]
        return client  # type: ignore[return-value]

    def __iter__(self) -> Iterator[SdkClient]:
        """The clients made so far."""
        return iter(list(self._clients.values()))

    async def aclose(self) -> None:
        """Close every client (and its connections); a later `get` makes new ones."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
