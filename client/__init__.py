"""Start, follow and inspect agent runs: the Python API and the `stalwart` command.

Names load on first use, so the command line starts without importing the Temporal client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AgentFileError": "stalwart.client.agent_files",
    "load_agent": "stalwart.client.agent_files",
    "RunHandle": "stalwart.client.api",
    "RunSummary": "stalwart.client.api",
    "SessionHandle": "stalwart.client.api",
    "StalwartClient": "stalwart.client.api",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from stalwart.client.agent_files import AgentFileError, load_agent
    from stalwart.client.api import RunHandle, RunSummary, SessionHandle, StalwartClient


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stalwart.client' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
