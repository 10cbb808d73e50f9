"""Start, follow and inspect agent runs: the Python API and the `stalwart` command."""

from stalwart.client.agent_files import AgentFileError, load_agent
from stalwart.client.api import RunHandle, RunSummary, StalwartClient

__all__ = ["AgentFileError", "RunHandle", "RunSummary", "StalwartClient", "load_agent"]
