"""A tool that works until the test opens its gate: holds a run (or a sub-agent's run) mid-turn while workers change."""

from __future__ import annotations

import asyncio

from stalwart.activities.tools import tool

gate = asyncio.Event()  # the test sets it to let every waiting call finish; clear it before the runs start
calls: list[str] = []  # each attempt's topic, in order (a call cut off by a worker's shutdown is tried again)


@tool(timeout_seconds=600, heartbeat_timeout_seconds=600)
async def gated_job(topic: str) -> str:
    """Works on a topic until the gate opens.

    Args:
        topic: What to work on.
    """
    calls.append(topic)
    await gate.wait()
    return f"{topic}: done"
