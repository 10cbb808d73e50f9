"""Streams pushed from the worker: a real dev server and workers whose plugin (and so broker) the test can see; the
wire server (tests/conftest.py) is the model that writes its answer word by word."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import pytest
from temporalio.worker import Worker

from stalwart.workers.plugin import StalwartPlugin

WorkerFactory = Callable[[], AbstractAsyncContextManager[StalwartPlugin]]


@pytest.fixture
def new_worker(dev_env, task_queue: str) -> WorkerFactory:
    """Starts a worker on the test's task queue and gives its plugin, whose `stream_broker` the test can read."""

    @contextlib.asynccontextmanager
    async def start() -> AsyncIterator[StalwartPlugin]:
        plugin = StalwartPlugin()
        async with Worker(dev_env.client, task_queue=task_queue, plugins=[plugin]):
            yield plugin

    return start
