"""Data contracts shared by workflows, activities, workers and clients.

Everything here is plain data (pydantic models and constants): importing it
does no I/O, so workflow code can use it inside the sandbox.
"""

from contracts.activities import DescribeToolsRequest, DescribeToolsResult, ModelContext, ModelRequest, ToolRequest
from contracts.agent import ActionFormat, AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SubAgent
from contracts.messages import AssistantTurn, Message, ToolCall, ToolResult, Usage
from contracts.run import AgentResult, RunEvent, RunInput, RunState, RunStatus, StepRecord, StopReason
from contracts.tools import ToolSpec

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
