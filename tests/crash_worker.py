"""A Stalwart worker in its own OS process, for tests that kill it.

Run by path: `python tests/crash_worker.py ADDRESS TASK_QUEUE`. It registers the
built-in tools plus `crash_tools` (importable because this file's directory
is first on sys.path) and polls until it is killed.
"""

from __future__ import annotations

import asyncio
import sys

from client.connection import connect
from workers.worker import build_worker, default_registry


async def main(address: str, task_queue: str) -> None:
    client = await connect(address)
    worker = build_worker(client, registry=default_registry(["crash_tools"]), task_queue=task_queue)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
