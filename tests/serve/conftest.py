"""`stalwart serve` against the real dev server, with a worker on the test's task queue and the wire server for
models that write their answer word by word."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stalwart.client.api import StalwartClient
from stalwart.workers.worker import build_worker

from support.serve_api import Served, served


@pytest.fixture
async def worker(dev_env, task_queue: str) -> AsyncIterator[None]:
    async with build_worker(dev_env.client, task_queue=task_queue):
        yield


@pytest.fixture
async def server(stalwart_client: StalwartClient, worker: None) -> AsyncIterator[Served]:
    async with served(stalwart_client) as running:
        yield running
