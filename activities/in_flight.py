"""A call still running on this worker when the server gives up on its attempt is joined, not started again.

Heartbeat timeouts are short (a few seconds), so a dead worker's call is soon run elsewhere. A server outage
longer than that makes the server time out the attempt of a call this worker is still running (its heartbeats
could not reach the server): once the server is back it offers a new attempt, and the SDK cancels the old one,
saying it timed out or is gone. The call keeps running in a task of its own; the new attempt, here, waits for that
task instead of running the call a second time. Only a real cancellation (the run's, or the worker shutting down)
stops the call. A new attempt taken by another worker while this one still runs the call runs it again: that
worker cannot know.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

from temporalio import activity

from stalwart.activities.heartbeats import heartbeating

T = TypeVar("T")

JOINED_HEARTBEAT_SECONDS = 1.0
"""How often an attempt that joined a running call heartbeats while it waits (the call's own beats go to the
attempt that started it)."""


class InFlight(Generic[T]):
    """The calls running on this worker, by key (the run and activity id: the same for every attempt)."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Task[T]] = {}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._running

    async def run(self, key: Hashable, work: Callable[[], Coroutine[Any, Any, T]], *, what: str) -> T:
        """`work()`'s result; an attempt whose call is already running here waits for it instead."""
        task = self._running.get(key)
        if task is None:
            task = asyncio.ensure_future(work())
            self._running[key] = task
            task.add_done_callback(lambda done: self._forget(key, done))
            return await self._wait(task)
        activity.logger.info(
            "%s is still running on this worker from an attempt the server gave up on; attempt %d waits for it "
            "instead of running it again",
            what,
            activity.info().attempt,
        )
        async with heartbeating(JOINED_HEARTBEAT_SECONDS, activity.heartbeat):
            return await self._wait(task)

    def _forget(self, key: Hashable, done: asyncio.Task[T]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved, so a call nobody waits for any more logs no "never retrieved"

    @staticmethod
    async def _wait(task: asyncio.Task[T]) -> T:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not _attempt_given_up():
                task.cancel()  # the run's cancellation, or the worker's shutdown: the call stops, and is waited for
                with contextlib.suppress(BaseException):
                    await task
            raise


def _attempt_given_up() -> bool:
    """Whether this attempt is cancelled because the server timed it out or no longer knows it (a new attempt may
    come, here), rather than because the run cancelled it or the worker is shutting down."""
    details = activity.cancellation_details()
    return details is not None and (details.timed_out or details.not_found) and not details.cancel_requested
