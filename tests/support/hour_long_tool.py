"""A tool that works for an hour, to hold a run (or a sub-agent's run) in a tool call while a test acts on it."""

from __future__ import annotations

import asyncio

from temporalio.api.testservice.v1 import UnlockTimeSkippingRequest
from temporalio.testing import WorkflowEnvironment

from stalwart.activities.tools import tool

tool_started = asyncio.Event()  # set when hour_long_job starts; clear it before starting the run that calls it


# The heartbeat timeout must outlast any time the test server skips while the run is waited on: once
# time skipping is released it jumps to the earliest deadline, and a 10 s heartbeat timeout would fire
# (and retry the tool) before a 60 s budget does.
@tool(timeout_seconds=7200, heartbeat_timeout_seconds=600)
async def hour_long_job(topic: str) -> str:
    """Works for an hour.

    Args:
        topic: What to work on.
    """
    tool_started.set()
    await asyncio.sleep(3600)
    return "finished"


async def unlock_time_skipping(env: WorkflowEnvironment) -> None:
    """The test server holds time still while an activity runs; release that hold so workflow time can pass."""
    await env.client.test_service.unlock_time_skipping(UnlockTimeSkippingRequest())
