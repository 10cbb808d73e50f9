"""What a worker keeps open across activities (MCP connections, provider SDK clients), closed when it stops."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from temporalio.plugin import SimplePlugin


def closed_when_worker_stops(name: str, aclose: Callable[[], Awaitable[None]]) -> SimplePlugin:
    """A worker plugin that awaits `aclose()` once the worker has stopped running, however it stopped."""

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        try:
            yield
        finally:
            await aclose()

    return SimplePlugin(name, run_context=lifespan)
