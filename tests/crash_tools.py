"""A side-effecting tool for the crash-and-resume test.

`append_record` writes one line per call to the file named by the run input
`records_file`, and logs every attempt (with the worker's pid) next to it, so
the test can tell which process ran what and whether a finished call ran again.
It uses the idempotency key the way a real side-effecting tool should: a
retried call whose effect already happened does not repeat it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from temporalio import activity

from stalwart.activities.tools.registry import ToolContext, tool

WORK_SECONDS = 0.5


def attempts_file(records_file: Path) -> Path:
    """Where `append_record` logs each attempt: `<key> <value> <attempt> <pid>` per line."""
    return records_file.with_name(records_file.name + ".attempts")


def _append_line(path: Path, line: str) -> None:
    with path.open("a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


# A killed worker's call is noticed by its missing heartbeats, after the default heartbeat timeout (5 s).
@tool(side_effecting=True)
async def append_record(value: str, context: ToolContext) -> str:
    """Append a record to the run's records file, once per call even if the call is retried.

    Args:
        value: The text to record.
    """
    records = Path(context.run_inputs["records_file"])
    _append_line(attempts_file(records), f"{context.idempotency_key} {value} {activity.info().attempt} {os.getpid()}")
    await asyncio.sleep(WORK_SECONDS)
    record = f"{context.idempotency_key} {value}"
    if not (records.exists() and record in records.read_text().splitlines()):
        _append_line(records, record)
    return f"recorded {value}"
