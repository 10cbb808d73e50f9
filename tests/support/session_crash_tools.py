"""A tool that holds a session's turn until the test lets it go, for tests that kill a worker process.

The tool runs in the worker subprocess, so the test cannot share an event with it:
`hold_until_released` logs each attempt (`<pid> <attempt>`) to the file `entered` in the
run input `gate_dir`, then waits until a file `release` appears there. A retried attempt
(on the next worker, after the first one died) logs itself again, so the test sees which
process holds the turn.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from temporalio import activity

from stalwart.activities.tools.registry import ToolContext, tool

ENTERED = "entered"
RELEASE = "release"


def entered_by(gate_dir: Path) -> list[tuple[int, int]]:
    """`(pid, attempt)` of every attempt of `hold_until_released` so far, in order."""
    path = gate_dir / ENTERED
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(pid), int(attempt)) for pid, attempt in (line.split() for line in lines)]


def release(gate_dir: Path) -> None:
    """Let every attempt of `hold_until_released` of this gate finish."""
    (gate_dir / RELEASE).touch()


# A short heartbeat timeout: the server notices the killed worker and retries the call on the next one soon.
@tool(heartbeat_timeout_seconds=5)
async def hold_until_released(topic: str, context: ToolContext) -> str:
    """Waits until the test releases it.

    Args:
        topic: Anything.
    """
    gate = Path(context.run_inputs["gate_dir"])
    with (gate / ENTERED).open("a") as out:
        out.write(f"{os.getpid()} {activity.info().attempt}\n")
        out.flush()
        os.fsync(out.fileno())
    while not (gate / RELEASE).exists():
        await asyncio.sleep(0.05)
    return f"released {topic}"
