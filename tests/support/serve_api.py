"""`stalwart serve` in the test's loop on a free loopback port, and a reader of its Server-Sent Events."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from stalwart.client.api import StalwartClient
from stalwart.client.serve.app import ServeSettings, serve_app
from stalwart.client.serve.feed import PolledFeed
from stalwart.workers.dev_server import free_port

from support.a2a_http import serving


@dataclass
class Served:
    """A running server: where it is, and its feed (closed before the server stops, so open streams end)."""

    url: str
    feed: PolledFeed
    settings: ServeSettings

    def client(self, *, headers: dict[str, str] | None = None, **options: Any) -> httpx.AsyncClient:
        """An HTTP client of the server, with its token when it has one (and any `headers`)."""
        token = self.settings.token
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=sent | (headers or {}), timeout=None, **options)


@contextlib.asynccontextmanager
async def served(stalwart: StalwartClient, settings: ServeSettings | None = None) -> AsyncIterator[Served]:
    settings = settings or ServeSettings()
    feed = PolledFeed(stalwart)
    port = free_port()
    async with serving(serve_app(stalwart, settings, feed), port):
        try:
            yield Served(f"http://127.0.0.1:{port}", feed, settings)
        finally:
            await feed.close()


@dataclass
class Event:
    id: str | None
    kind: str
    data: dict[str, Any]


@dataclass
class EventReader:
    """Reads one event stream's events, in order, as they come."""

    response: httpx.Response
    lines: AsyncIterator[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = aiter(self.response.aiter_lines())

    async def next(self) -> Event:
        kind, data, event_id = "message", "", None
        async for line in self.lines:
            if line == "":
                if data:
                    return Event(event_id, kind, json.loads(data))
                kind, data = "message", ""
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "data":
                data += value
            elif name == "id":
                event_id = value
        raise EOFError("the event stream ended")

    async def until(self, kind: str, test: Any = None) -> tuple[list[Event], Event]:
        """Every event up to the first of `kind` (for which `test(data)` holds), and that one."""
        seen: list[Event] = []
        while True:
            event = await self.next()
            seen.append(event)
            if event.kind == kind and (test is None or test(event.data)):
                return seen, event


async def open_session(http: httpx.AsyncClient, spec: dict[str, Any], opened: list[str]) -> str:
    """The id of a new session of `spec`, started through the API and added to `opened` for the test to close."""
    started = await http.post("/api/sessions", json={"agent_spec": spec})
    assert started.status_code == 201, started.text
    session_id = str(started.json()["session_id"])
    opened.append(session_id)
    return session_id


@contextlib.asynccontextmanager
async def events(http: httpx.AsyncClient, run_id: str, last_event_id: str | None = None) -> AsyncIterator[EventReader]:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    async with http.stream("GET", f"/api/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        yield EventReader(response)
