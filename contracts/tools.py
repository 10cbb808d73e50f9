"""How a tool is described to the model and to the loop."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from stalwart.contracts.agent import MAX_SECONDS, McpServerSpec, SubAgent
from stalwart.contracts.wire import Compact

DEFAULT_HEARTBEAT_TIMEOUT_SECONDS = 5.0
"""A tool call's default heartbeat timeout: a killed worker's call runs again elsewhere within seconds."""


class ToolSpec(Compact):
    """A tool as the loop knows it: enough to show it to a model and to schedule it.

    `parameters` is the JSON schema the model sees. `kind` chooses a handler
    when no handler is registered under the tool's own name.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    kind: str = "function"
    side_effecting: bool = False
    requires_approval: bool = False
    fast: bool = False
    """Run as a Temporal local activity, inside the workflow's task: no round trip through the server, its result
    recorded as a marker, at most `policies.FAST_TOOL_TIMEOUT` an attempt, no heartbeats. For quick pure functions
    (a calculator); docs/agents-and-tools.md says what else it changes."""
    timeout_seconds: float = Field(300.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    heartbeat_timeout_seconds: float = Field(
        DEFAULT_HEARTBEAT_TIMEOUT_SECONDS, gt=0, le=MAX_SECONDS, allow_inf_nan=False
    )
    """How soon a silent (crashed) worker's call is retried elsewhere. A server outage longer than this does not run
    a call again on the worker that ran it: that worker answers the new attempt with the call's result, or joins the
    call if it still runs (`activities/in_flight.py`)."""
    bindings: dict[str, str] = Field(default_factory=dict)
    """Parameter name -> run input name; bound parameters are filled from the run's inputs."""
    server: McpServerSpec | None = None
    """For kind "mcp": the server hosting the tool, carried whole so `run_tool` reaches it from its request alone."""
    remote_name: str | None = None
    """The tool's name on its MCP server, when `name` was prefixed to avoid a collision."""
    sub_agent: SubAgent | None = None
    """For kind "agent": the agent a call delegates to, carried whole so the delegation needs nothing else."""

    def for_running(self) -> ToolSpec:
        """The spec as the tool activity needs it. A function or MCP tool is run by name (the worker's registry
        validates the arguments, the MCP server its own), so what only the model reads is not sent with each call."""
        if self.kind not in ("function", "mcp"):
            return self  # a kind handler of the worker's may read all of it
        return self.model_copy(update={"description": "", "parameters": {}})
