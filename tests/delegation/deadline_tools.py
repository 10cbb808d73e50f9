"""A tool for the deadline-inheritance test, loaded by a `stalwart worker` subprocess (`--tools deadline_tools`).

`slow_lookup` logs the wall-clock time of every call it starts (with the worker's pid) to the file named by the run
input `calls_file`, then works for a minute: the test kills the worker while it does.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from stalwart.activities.tools.registry import ToolContext, tool


# A killed worker's call is noticed by its missing heartbeats: 2 s keeps the test quick.
@tool(heartbeat_timeout_seconds=2)
async def slow_lookup(topic: str, context: ToolContext) -> str:
    """Look a topic up, slowly.

    Args:
        topic: What to look up.
    """
    with Path(context.run_inputs["calls_file"]).open("a") as out:
        out.write(f"{time.time()} {os.getpid()}\n")
    await asyncio.sleep(60)
    return f"{topic}: nothing found"
