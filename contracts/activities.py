"""Inputs and outputs of the activities, shared by the workflow that schedules them and the worker that runs them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Message, ToolCall
from stalwart.contracts.tools import ToolSpec


class ModelRequest(BaseModel):
    """Ask for the next assistant turn.

    The conversation itself is not in this input: the activity reads it from
    the workflow that scheduled it (query `model_context`), so each message
    is recorded in the history once instead of once per turn.
    """

    step: int
    message_count: int
    tools_enabled: bool = True


class ModelContext(BaseModel):
    """Everything a provider needs for one call: who the agent is, what it may call, what was said."""

    agent: AgentSpec
    step: int
    tools: list[ToolSpec]
    messages: list[Message]
    tools_enabled: bool = True


class DescribeToolsRequest(BaseModel):
    agent: AgentSpec


class DescribeToolsResult(BaseModel):
    tools: list[ToolSpec]


class ToolRequest(BaseModel):
    """Run one tool call. `idempotency_key` is stable across retries and worker crashes."""

    call: ToolCall
    tool: ToolSpec
    idempotency_key: str
    run_inputs: dict[str, Any] = Field(default_factory=dict)
