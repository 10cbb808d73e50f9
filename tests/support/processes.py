"""Whether a process still runs, for the tests that check a server or worker was stopped (Linux's /proc)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def still_running(pid: int) -> bool:
    """Whether any thread of process `pid` still runs; a process that exited but was not yet reaped does not.

    The first thread's state is not the process's: it shows as a zombie while the other threads still exit,
    holding the process's files and sockets (a Go dev server's port stayed open for that moment, 1 time in 8)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False
    for thread in threads:
        with contextlib.suppress(FileNotFoundError):
            if Path(f"/proc/{pid}/task/{thread}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                return True
    return False
