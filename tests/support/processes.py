"""Processes of a test: whether one still runs, for the tests that check a server or worker was stopped (Linux's
/proc), and a server started as a process of its own."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
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


@contextlib.contextmanager
def listening_process(
    argv: list[str], port: int, *, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` as a process, entered once it accepts connections on 127.0.0.1:`port`; killed when the block ends."""
    process = subprocess.Popen(argv, env=env)
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{' '.join(argv[1:2])} exited with {process.returncode} before serving on {port}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield process
    finally:
        process.kill()
        process.wait()
