"""`stalwart serve` against the real dev server, with a worker on the test's task queue and the wire server for
models that write their answer word by word."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from stalwart.client.api import StalwartClient
from stalwart.workers.worker import build_worker

from support.serve_api import Served, served


@pytest.fixture
def stalwart_client(dev_env, task_queue: str) -> StalwartClient:
    return StalwartClient(dev_env.client, task_queue=task_queue)


@pytest.fixture
async def worker(dev_env, task_queue: str) -> AsyncIterator[None]:
    async with build_worker(dev_env.client, task_queue=task_queue):
        yield


@pytest.fixture
async def server(stalwart_client: StalwartClient, worker: None) -> AsyncIterator[Served]:
    async with served(stalwart_client) as running:
        yield running


@pytest.fixture
async def opened(dev_env) -> AsyncIterator[list[str]]:
    """Ids of the runs and sessions a test started; those still open are terminated after it."""
    ids: list[str] = []
    yield ids
    for run_id in ids:
        with contextlib.suppress(Exception):
            await dev_env.client.get_workflow_handle(run_id).terminate(reason="test over")
