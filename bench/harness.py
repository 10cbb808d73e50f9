"""A fresh dev server with our worker and the baseline worker, the storage their runs write to, and the size of a
run's history."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.history.v1 import History
from temporalio.worker import Worker

from bench import baselines, tools
from stalwart.activities.storage.config import LOCAL_BUCKET, STORAGE_VAR, TRANSCRIPTS_AREA, default_local_root
from stalwart.client.api import StalwartClient
from stalwart.client.chain import chain_histories
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.run import AgentResult
from stalwart.workers.dev_server import DevServer
from stalwart.workers.worker import build_worker, default_registry

OUR_QUEUE = "bench-ours"
BARE_QUEUE = "bench-bare"


@dataclass
class Run:
    """One finished run: wall-clock seconds from start to result, and its history's size.

    For a run that continued as new, events and bytes are summed over every Temporal run of its chain.
    """

    seconds: float
    events: int
    history_bytes: int
    activities: int
    runs: int
    result: AgentResult | None = None
    """Ours only: the run's result (a bare workflow's is not an `AgentResult`)."""
    workflow_id: str = ""
    """Where to read its history again (`run_ours` and `run_bare` set it)."""


@contextmanager
def scratch_storage(*, unless_configured: bool = False) -> Iterator[Path | None]:
    """A fresh storage folder for the benchmark's runs, removed when it ends; None when `unless_configured` and the
    user set STALWART_STORAGE (an S3 bucket, say), which is then used as it is.

    Without it every benchmark run left its conversations in the default storage folder: hundreds of
    megabytes after a day of measuring. The folder is made beside that default, on the same file system, so its
    durable writes cost what a worker's do (under a /tmp on tmpfs they would cost nothing). It is set before
    anything connects: the client, the worker's converter and its transcript store all read STALWART_STORAGE.
    """
    if unless_configured and os.environ.get(STORAGE_VAR):
        yield None
        return
    parent = default_local_root().parent
    made_parent = not parent.exists()
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-", dir=parent)).resolve()
    before = os.environ.get(STORAGE_VAR)
    os.environ[STORAGE_VAR] = str(root)
    try:
        yield root
    finally:
        if before is None:
            del os.environ[STORAGE_VAR]
        else:
            os.environ[STORAGE_VAR] = before
        shutil.rmtree(root, ignore_errors=True)
        if made_parent:  # a benchmark run on a fresh machine leaves no empty folder behind
            with contextlib.suppress(OSError):  # unless something else wrote there meanwhile
                parent.rmdir()


@asynccontextmanager
async def bench_server() -> AsyncIterator[StalwartClient]:
    """An in-memory, headless dev server on a free port, with both workers polling it and a scratch storage."""
    with scratch_storage(unless_configured=True):
        async with DevServer(port=None, ui_port=None) as server:
            stalwart = await StalwartClient.connect(server.address, task_queue=OUR_QUEUE)
            registry = default_registry()
            registry.register_module(tools)
            ours = build_worker(stalwart.temporal, registry=registry, task_queue=OUR_QUEUE)
            bare = Worker(
                stalwart.temporal,
                task_queue=BARE_QUEUE,
                workflows=baselines.WORKFLOWS,
                activities=baselines.ACTIVITIES,
            )
            async with ours, bare:
                yield stalwart


async def measure(stalwart: StalwartClient, workflow_id: str) -> tuple[int, int, int, int]:
    """Events, protobuf bytes (what the server's history limits count), scheduled activities and Temporal runs
    of a run's continue-as-new chain."""
    histories = await chain_histories(stalwart.temporal, workflow_id)
    events = [event for history in histories for event in history.events]
    activities = sum(1 for e in events if e.HasField("activity_task_scheduled_event_attributes"))
    size = sum(History(events=history.events).ByteSize() for history in histories)
    return len(events), size, activities, len(histories)


async def run_ours(stalwart: StalwartClient, agent: AgentSpec, goal: str) -> Run:
    started = time.perf_counter()
    handle = await stalwart.start(agent, goal)
    result: AgentResult = await handle.result()
    seconds = time.perf_counter() - started
    if result.stop_reason != "done":
        raise RuntimeError(f"the benchmark run stopped with {result.stop_reason}: {result.error}")
    return Run(seconds, *await measure(stalwart, handle.run_id), result=result, workflow_id=handle.run_id)


async def run_bare(stalwart: StalwartClient, workflow: Any, *args: Any) -> Run:
    workflow_id = f"bare-{uuid.uuid4().hex[:12]}"
    started = time.perf_counter()
    await stalwart.temporal.execute_workflow(workflow, args=args, id=workflow_id, task_queue=BARE_QUEUE)
    seconds = time.perf_counter() - started
    return Run(seconds, *await measure(stalwart, workflow_id), workflow_id=workflow_id)


def storage_bytes(root: Path) -> dict[str, int]:
    """Bytes of every file under `root`, split into stored conversations and stored payloads."""
    sizes = {"transcripts": 0, "payloads": 0}
    transcripts = root / LOCAL_BUCKET / TRANSCRIPTS_AREA
    for path in root.rglob("*"):
        if path.is_file():
            sizes["transcripts" if path.is_relative_to(transcripts) else "payloads"] += path.stat().st_size
    return sizes
