"""Heartbeating on a timer while an activity waits on something slow.

A heartbeat is how the server notices a dead worker and how a cancellation
reaches a running activity. The heartbeat timeout counts from the activity's
start until its first beat, so the loop sleeps first: a quick call sends none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


@asynccontextmanager
async def heartbeating(every_seconds: float, beat: Callable[[], None]) -> AsyncIterator[None]:
    """Call `beat` every `every_seconds` while the block runs."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(every_seconds)
            beat()

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
