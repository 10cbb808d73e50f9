"""Tools that hang, for the worker-shutdown test: each marks its start in the file named by the run input
`marks`, with the worker's pid, then blocks for an hour on its first attempt (and answers on a retry)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from temporalio import activity

from stalwart.activities.tools.registry import ToolContext, tool

HOUR = 3600


def _mark(context: ToolContext, name: str) -> int:
    attempt = activity.info().attempt
    with Path(context.run_inputs["marks"]).open("a") as out:
        out.write(f"{name} {attempt} {os.getpid()}\n")
    return attempt


@tool(side_effecting=True)
async def hang_async(note: str, context: ToolContext) -> str:
    """Wait an hour (cancellable), the first time.

    Args:
        note: Anything.
    """
    if _mark(context, "hang_async") == 1:
        await asyncio.sleep(HOUR)
    return f"async {note}"


@tool(side_effecting=True)
def hang_sync(note: str, context: ToolContext) -> str:
    """Block a thread for an hour (not cancellable), the first time.

    Args:
        note: Anything.
    """
    if _mark(context, "hang_sync") == 1:
        time.sleep(HOUR)
    return f"sync {note}"
