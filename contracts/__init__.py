"""Data contracts shared by workflows, activities, workers and clients.

Everything here is plain data (pydantic models and constants): importing it
does no I/O, so workflow code can use it inside the sandbox.
"""

from stalwart.contracts.activities import (
    DescribeToolsRequest,
    DescribeToolsResult,
    ModelContext,
    ModelRequest,
    ToolRequest,
)
from stalwart.contracts.agent import ActionFormat, AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SubAgent
from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, ToolResult, Usage
from stalwart.contracts.run import AgentResult, RunEvent, RunInput, RunState, RunStatus, StepRecord, StopReason
from stalwart.contracts.tools import ToolSpec

__all__ = [
    "ActionFormat",
    "AgentResult",
    "AgentSpec",
    "AssistantTurn",
    "Budgets",
    "DescribeToolsRequest",
    "DescribeToolsResult",
    "Message",
    "ModelContext",
    "ModelRequest",
    "RunEvent",
    "RunInput",
    "RunState",
    "RunStatus",
    "ScriptedReply",
    "ScriptedToolCall",
    "StepRecord",
    "StopReason",
    "SubAgent",
    "ToolCall",
    "ToolRequest",
    "ToolResult",
    "ToolSpec",
    "Usage",
]
