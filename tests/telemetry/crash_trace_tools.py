"""The tool of the traced crash test: `gated_record` holds the call named in the run input `hold` until the file
named by `release` exists, so the test kills the worker while a known call is in flight."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from stalwart.activities.tools.registry import ToolContext, tool


@tool(heartbeat_timeout_seconds=3.0)
async def gated_record(value: str, context: ToolContext) -> str:
    """Record a value.

    Args:
        value: The text to record.
    """
    started = Path(context.run_inputs["started"])
    with started.open("a") as out:
        out.write(f"{value} {os.getpid()}\n")
    if value == context.run_inputs["hold"]:
        release = Path(context.run_inputs["release"])
        while not release.exists():
            await asyncio.sleep(0.05)
    return f"recorded {value}"
