"""Data contracts shared by workflows, activities, workers and clients.

Everything here is plain data (pydantic models and constants): importing it does no I/O, so workflow code can
use it inside the sandbox. Each module is imported on its own, and importing this package imports none of them:
reading a finished run (`stalwart show`) loads the contracts of a run's record, not those of the agent spec.
The names below are still importable from here, each loading its module when first used; the names a user
needs are exported by `stalwart` itself.

- `agent`: the agent spec an agent file describes (`AgentSpec`, `Budgets`, ...).
- `run_input`: what a run starts with (`RunInput`), and what continue-as-new carries.
- `run`: what a run records (`StepRecord`, `RunState`, `AgentResult`, `RunEvent`).
- `messages`: the conversation (`Message`, `ToolCall`, `ToolResult`, `AssistantTurn`, `Usage`).
- `activities`: the inputs and outputs of the model and tool activities.
- `tools`, `approvals`, `stream`, `a2a`, `tracing`, `names`: one subject each; `converter`, `model`, `wire`: how
  the contracts travel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_HOMES = {
    "DescribeToolsRequest": "activities",
    "DescribeToolsResult": "activities",
    "ModelContext": "activities",
    "ModelRequest": "activities",
    "ToolRequest": "activities",
    "ActionFormat": "agent",
    "AgentSpec": "agent",
    "Budgets": "agent",
    "ScriptedReply": "agent",
    "ScriptedToolCall": "agent",
    "SubAgent": "agent",
    "AssistantTurn": "messages",
    "Message": "messages",
    "ToolCall": "messages",
    "ToolResult": "messages",
    "Usage": "messages",
    "AgentResult": "run",
    "RunEvent": "run",
    "RunState": "run",
    "RunStatus": "run",
    "StepRecord": "run",
    "StopReason": "run",
    "RunInput": "run_input",
    "ToolSpec": "tools",
}
__all__ = [*_HOMES]

if TYPE_CHECKING:
    from stalwart.contracts.activities import (
        DescribeToolsRequest,
        DescribeToolsResult,
        ModelContext,
        ModelRequest,
        ToolRequest,
    )
    from stalwart.contracts.agent import ActionFormat, AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SubAgent
    from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, ToolResult, Usage
    from stalwart.contracts.run import AgentResult, RunEvent, RunState, RunStatus, StepRecord, StopReason
    from stalwart.contracts.run_input import RunInput
    from stalwart.contracts.tools import ToolSpec


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'stalwart.contracts' has no attribute {name!r}")
    # `__import__`, as an import statement does: in the workflow sandbox it goes through the sandbox's importer,
    # which hands workflow code the one shared copy of the contracts (`importlib` would load a second one there).
    return getattr(__import__(f"stalwart.contracts.{home}", fromlist=[name]), name)
