"""A Stalwart worker: the agent workflow, the model and tool activities, and the tools it can run."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.a2a.activities import a2a_delegate, a2a_describe
from activities.model_activity import ModelActivities
from activities.streaming import HEARTBEAT_THROTTLE
from activities.tool_activities import ToolActivities
from activities.tools import builtin
from activities.tools.registry import ToolRegistry
from contracts.names import TASK_QUEUE
from workflows import AgentWorkflow


def default_registry(tool_modules: Iterable[str] = ()) -> ToolRegistry:
    """The built-in tools plus every `@tool` in the named modules (`package.module`)."""
    registry = ToolRegistry()
    registry.register_module(builtin)
    for name in tool_modules:
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            raise SystemExit(f"cannot import tool module {name!r}: {err}. Pass an importable module, e.g. `--tools mypackage.tools`.") from err
        if not registry.register_module(module):
            raise SystemExit(f"tool module {name!r} defines no @tool functions at its top level.")
    return registry


def build_worker(
    client: Client,
    *,
    registry: ToolRegistry | None = None,
    task_queue: str = TASK_QUEUE,
    models: ModelActivities | None = None,
    **worker_options: Any,
) -> Worker:
    """A worker that runs agents on `task_queue` with the tools of `registry` (and the model activity `models`).

    Its MCP connections and model SDK clients live as long as the worker runs:
    they close (stopping stdio servers) when it shuts down, through the worker
    plugins of the tool and model activities.
    Heartbeats reach the server within 100 ms: the streamed answer travels in
    them, and so does the cancellation of a tool.
    """
    worker_options.setdefault("max_heartbeat_throttle_interval", HEARTBEAT_THROTTLE)
    tools = ToolActivities(registry or default_registry())
    models = models or ModelActivities()
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=[models.model_turn, tools.describe_tools, tools.run_tool, a2a_describe, a2a_delegate],
        plugins=[*worker_options.pop("plugins", ()), tools.worker_plugin(), models.worker_plugin()],
        **worker_options,
    )
