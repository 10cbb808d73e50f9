"""Deadlines and cancellation in one place: work raced against a durable timer.

The wall-clock budget is an absolute deadline, so it survives continue-as-new unchanged:
the next run sleeps only what is left. When the timer wins, the work is cancelled (its
activities and child workflows with it) and awaited, so nothing runs on after the budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import datetime
from typing import Any, TypeVar

from temporalio import workflow

T = TypeVar("T")


class DeadlineReached(Exception):
    """The durable timer fired before the work finished; the work has been cancelled."""


async def before(deadline: datetime | None, work: Coroutine[Any, Any, T], *, summary: str) -> T:
    """Run `work` until `deadline`; raise `DeadlineReached` if the deadline comes first.

    A cancellation of the caller cancels both the work and the timer.
    """
    task = asyncio.ensure_future(work)
    if deadline is None:
        try:
            return await task
        except asyncio.CancelledError:
            task.cancel()
            raise
    left = max((deadline - workflow.now()).total_seconds(), 0.0)
    timer = asyncio.ensure_future(workflow.sleep(left, summary=summary))
    try:
        await workflow.wait([task, timer], return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        timer.cancel()
        raise
    if task.done():
        timer.cancel()
        return task.result()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    raise DeadlineReached()
