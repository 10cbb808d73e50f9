"""A real `stalwart worker` as a process of its own, for the tests that kill or stop one while a run goes on.

Its tools come from a test's module (`--tools`), importable from the folder that holds it; its output goes to a log,
which a test shows when the worker exits unasked, instead of waiting forever for a run no worker will finish.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from stalwart.client.api import RunHandle
from stalwart.contracts.run import AgentResult


def start_worker(
    address: str, task_queue: str, log: Path, *, tools: str, tools_dir: Path, options: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """`stalwart worker` on `task_queue`, with the tool module `tools` found in `tools_dir`, and further `options`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tools_dir), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "stalwart.client.cli", "worker", "--address", address, "--task-queue", task_queue]
    with log.open("wb") as out:
        return subprocess.Popen([*command, "--tools", tools, *options], stdout=out, stderr=subprocess.STDOUT, env=env)


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """Stop `process` if it was started and still runs, and reap it."""
    if process is not None and process.poll() is None:
        process.terminate()
        process.wait()


def assert_alive(worker: subprocess.Popen[bytes], log: Path) -> None:
    """Fail with the worker's log when it has exited by itself."""
    if worker.poll() is not None:
        raise AssertionError(f"a worker exited by itself with code {worker.returncode}; its log:\n{log.read_text()}")


async def result_while_alive(run: RunHandle, worker: subprocess.Popen[bytes], log: Path) -> AgentResult:
    """The run's result, or the worker's log if the only worker left dies first."""
    result = asyncio.ensure_future(run.result())
    while not result.done():
        if worker.poll() is not None:
            result.cancel()
        assert_alive(worker, log)
        await asyncio.wait([result], timeout=0.2)
    return result.result()
