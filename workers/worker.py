"""A Stalwart worker: the agent workflow, the model and tool activities, and the tools it can run."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.storage.config import StorageConfig
from stalwart.activities.tools.registry import ToolRegistry
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.errors import UsageError
from stalwart.contracts.names import TASK_QUEUE
from stalwart.workers.plugin import StalwartPlugin, default_tool_registry

STICKY_QUEUE_TIMEOUT = timedelta(seconds=1)
"""How long a run's next workflow task, or a query, waits for the worker that holds the run in its cache before any
worker may take it. The SDK's 10 s made a run whose worker was killed wait 10 s for each query (`stalwart show`
took 15 s, reading history after its tries) and before its next step; a worker alive takes a task in milliseconds.
"""

WORKFLOW_TASK_STORAGE_CONCURRENCY = 1
"""Payloads of one workflow task stored or fetched at once. With the SDK's 3, its storage pass over an activation
or a completion starts an asyncio task for each payload, even the small ones that never go to storage: 0.1 ms of
each activation's decoding and of each completion's encoding, 0.45 ms of a fast tool call's two activations
(bench/README.md). A task with several payloads over the storage threshold stores them one after another; the
activities store large results and conversations themselves, so a workflow task seldom holds two."""

WORKER_DEFAULTS: dict[str, Any] = {
    "sticky_queue_schedule_to_start_timeout": STICKY_QUEUE_TIMEOUT,
    "max_workflow_task_external_storage_concurrency": WORKFLOW_TASK_STORAGE_CONCURRENCY,
}
"""Worker options `build_worker` sets unless given: the sticky queue's timeout, one payload at a time through
storage, and nothing for throughput, as `bench/concurrency.py` found no SDK default binding.

At 1,000 runs at once the machine's cores run out first: 100 activity slots of 200 ms model calls allow
500 calls a second against the 45 to 60 steps a second measured (so about 10 slots in use), and the sticky
cache (1,000 runs) holds every run. Add an option here only with a benchmark run that shows it helps.
"""


class ToolModuleError(UsageError, ImportError):
    """A `--tools` module that cannot be imported, or that defines no `@tool` function at its top level."""


def default_registry(tool_modules: Iterable[str] = ()) -> ToolRegistry:
    """The built-in tools plus every `@tool` in the named modules (`package.module`).

    A module in the current folder is found: the `stalwart` console script, unlike `python -m`, does not put
    the folder it starts in on `sys.path`, so `stalwart dev --tools planner` would not find `planner.py`.
    """
    registry = default_tool_registry()
    tool_modules = list(tool_modules)
    if tool_modules:
        _current_folder_importable()
    for name in tool_modules:
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            raise ToolModuleError(
                f"cannot import tool module {name!r}: {err}. Pass an importable module, e.g. `--tools mypackage.tools`."
            ) from err
        if not registry.register_module(module):
            raise ToolModuleError(f"tool module {name!r} defines no @tool functions at its top level.")
    return registry


def _current_folder_importable() -> None:
    here = os.getcwd()
    if not any(entry in ("", ".", here) for entry in sys.path):
        sys.path.insert(0, here)


def build_worker(
    client: Client,
    *,
    registry: ToolRegistry | None = None,
    agents: Iterable[AgentSpec] = (),
    task_queue: str = TASK_QUEUE,
    models: ModelActivities | None = None,
    storage: StorageConfig | None = None,
    allowed_env: Iterable[str] = (),
    tracer_provider: Any = None,
    metrics_port: int | str | None = None,
    **worker_options: Any,
) -> Worker:
    """A worker that runs agents on `task_queue` with the tools of `registry`, through `StalwartPlugin`.

    `agents`: agents whose tools were given as `@tool` functions (`AgentSpec(tools=[lookup_order])`); the worker
    registers those functions too.

    Its MCP connections and model SDK clients live as long as the worker runs:
    they close (stopping stdio servers) when it shuts down. `allowed_env`, `tracer_provider`, `metrics_port`:
    see `StalwartPlugin` (`metrics_port` needs a client connected with `connect(metrics_port=...)`).
    """
    plugin = StalwartPlugin(
        registry=registry,
        agents=agents,
        models=models,
        storage=storage,
        allowed_env=allowed_env,
        tracer_provider=tracer_provider,
        metrics_port=metrics_port,
    )
    return Worker(
        client,
        task_queue=task_queue,
        plugins=[plugin, *worker_options.pop("plugins", ())],
        **{**WORKER_DEFAULTS, **worker_options},
    )
