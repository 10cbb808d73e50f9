"""Stalwart: durable AI agents on Temporal.

Everything a user needs is importable from here; the subpackages
(`stalwart.contracts`, `stalwart.workflows`, `stalwart.activities`,
`stalwart.workers`, `stalwart.client`) are the implementation. Names load on
first use, so `import stalwart` neither imports a provider SDK nor starts
anything: a CLI, a client or a test pays only for what it touches.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it. tests/test_package.py checks this
# against __all__ and against the README's list of the public API.
_EXPORTS: dict[str, str] = {
    # starting, following and talking to runs and sessions
    "StalwartClient": "stalwart.client.api",
    "RunHandle": "stalwart.client.api",
    "RunSummary": "stalwart.client.api",
    "connect": "stalwart.client.connection",
    # agents
    "AgentSpec": "stalwart.contracts.agent",
    "Budgets": "stalwart.contracts.agent",
    "OutputSpec": "stalwart.contracts.agent",
    "load_agent": "stalwart.client.agent_files",
    "AgentFileError": "stalwart.client.agent_files",
    # tools
    "tool": "stalwart.activities.tools.registry",
    "ToolContext": "stalwart.activities.tools.registry",
    "RetryableToolError": "stalwart.activities.tools.registry",
    # results
    "AgentResult": "stalwart.contracts.run",
    "RunState": "stalwart.contracts.run",
    "StepRecord": "stalwart.contracts.run",
    "StopReason": "stalwart.contracts.run",
    "Usage": "stalwart.contracts.messages",
    # workers
    "StalwartPlugin": "stalwart.workers.plugin",
    "build_worker": "stalwart.workers.worker",
    # errors: one tree, a branch for each kind of trouble (docs/errors.md)
    "StalwartError": "stalwart.contracts.errors",
    "UsageError": "stalwart.contracts.errors",
    "NotFound": "stalwart.contracts.errors",
    "RunFailed": "stalwart.contracts.errors",
    "InfrastructureError": "stalwart.contracts.errors",
}

__all__ = [*_EXPORTS, "__version__"]

if TYPE_CHECKING:
    from stalwart.activities.tools.registry import RetryableToolError, ToolContext, tool
    from stalwart.client.agent_files import AgentFileError, load_agent
    from stalwart.client.api import RunHandle, RunSummary, StalwartClient
    from stalwart.client.connection import connect
    from stalwart.contracts.agent import AgentSpec, Budgets, OutputSpec
    from stalwart.contracts.errors import InfrastructureError, NotFound, RunFailed, StalwartError, UsageError
    from stalwart.contracts.messages import Usage
    from stalwart.contracts.run import AgentResult, RunState, StepRecord, StopReason
    from stalwart.workers.plugin import StalwartPlugin
    from stalwart.workers.worker import build_worker


def _lazily(exports: dict[str, str], owner: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's `__getattr__` and `__dir__` (PEP 562) that import each of its public names, `exports` (name ->
    the module defining it), on first use: the one lazy-export mechanism, here and in `stalwart.errors`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[owner], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__


__getattr__, __dir__ = _lazily(_EXPORTS, __name__)
