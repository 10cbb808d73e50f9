"""Testing your agents: a time-skipping Temporal server with a Stalwart worker, scripted replies, and replay.

    from stalwart.testing import call, reply, stalwart_test_environment

    async def test_my_agent():
        async with stalwart_test_environment(tools=[mytools]) as env:
            result = await env.client.run(agent, "goal")

With pytest, `pytest_plugins = ["stalwart.testing"]` in a conftest.py also gives the fixture
`stalwart_env`. Needs the `stalwart[testing]` extra (the time-skipping test server).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.activities.tools.registry import ToolRegistry
from stalwart.client.api import StalwartClient
from stalwart.client.replay import ReplayOutcome, replay_files
from stalwart.client.replay import export_run as _export_run
from stalwart.contracts.agent import ScriptedReply, ScriptedToolCall
from stalwart.workers.dev_server import find_executable
from stalwart.workers.plugin import StalwartPlugin
from stalwart.workers.search_attributes import ensure_search_attributes

__all__ = [
    "ScriptedReply",
    "ScriptedToolCall",
    "StalwartTestEnvironment",
    "call",
    "export_run",
    "replay_histories",
    "reply",
    "stalwart_test_environment",
]


@dataclass(frozen=True)
class StalwartTestEnvironment:
    """A running test server and worker: start runs with `client`; `temporal` is the server's environment."""

    client: StalwartClient
    temporal: WorkflowEnvironment
    task_queue: str


@asynccontextmanager
async def stalwart_test_environment(
    *, tools: Iterable[ModuleType | Any] = (), registry: ToolRegistry | None = None
) -> AsyncIterator[StalwartTestEnvironment]:
    """A time-skipping Temporal test server with a Stalwart worker running the built-in tools and `tools`.

    Timers (budgets, approval timeouts, idle sessions) pass at once whenever every run waits on one.
    """
    server = find_executable("temporal-test-server")
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=stalwart_converter(), test_server_existing_path=str(server)
    )
    try:
        await ensure_search_attributes(env.client)
        task_queue = f"stalwart-test-{uuid.uuid4().hex[:8]}"
        async with Worker(env.client, task_queue=task_queue, plugins=[StalwartPlugin(tools=tools, registry=registry)]):
            yield StalwartTestEnvironment(StalwartClient(env.client, task_queue=task_queue), env, task_queue)
    finally:
        await env.shutdown()


def reply(text: str = "", *calls: ScriptedToolCall, input_tokens: int = 10, output_tokens: int = 10) -> ScriptedReply:
    """One reply of the scripted model: text, tool calls, and the usage it reports."""
    return ScriptedReply(text=text, tool_calls=list(calls), input_tokens=input_tokens, output_tokens=output_tokens)


def call(name: str, **arguments: Any) -> ScriptedToolCall:
    """A tool call (or a delegation, by the sub-agent's name with a `task`) for a scripted reply."""
    return ScriptedToolCall(name=name, arguments=arguments)


async def export_run(client: StalwartClient | Client, run_id: str, folder: str | Path) -> list[Path]:
    """Write a run's history (every run of its continue-as-new chain, with the stored payloads it names) as files
    in `folder`, to replay with `replay_histories`; `client` is `env.client` or a Temporal client."""
    temporal = client.temporal if isinstance(client, StalwartClient) else client
    return await _export_run(temporal, run_id, folder)


async def replay_histories(path: str | Path) -> list[ReplayOutcome]:
    """Replay every history file under `path` against the code installed here; fail on any divergence."""
    outcomes = await replay_files([Path(path)])
    if not outcomes:
        raise AssertionError(f"no history files under {path}: record some with `stalwart history export RUN_ID`")
    failed = [o for o in outcomes if not o.ok]
    if failed:
        # A history unreadable here (no key, no stored payloads) says so, not that the code diverged.
        details = "\n".join(
            f"{o.name}: diverges: {o.divergence}" if o.divergence else f"{o.name}: cannot be read here: {o.unreadable}"
            for o in failed
        )
        raise AssertionError(f"{len(failed)} of {len(outcomes)} recorded runs no longer replay:\n{details}")
    return outcomes


try:
    # pytest-asyncio's own decorator: a plain pytest fixture of an async generator is set up in its `auto` mode
    # only, and its default, `strict`, fails every test that asks for it.
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover - the fixture needs pytest-asyncio (the testing extra), the rest does not
    pass
else:

    @_async_fixture
    async def stalwart_env() -> AsyncIterator[StalwartTestEnvironment]:
        """A time-skipping server and a worker with the built-in tools, for one test."""
        async with stalwart_test_environment() as env:
            yield env
