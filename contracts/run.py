"""A run of an agent: its input, its audit trail and its result."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Usage

StopReason = Literal["done", "max_steps", "max_seconds", "max_tokens", "max_cost", "cancelled", "error"]
RunStatus = Literal[
    "running", "awaiting_approval", "done", "max_steps", "max_seconds", "max_tokens", "max_cost", "cancelled", "error"
]
StepRole = Literal["user", "assistant", "tool"]


class RunInput(BaseModel):
    """The workflow input: the whole agent spec, the goal, and named inputs for tool bindings."""

    agent: AgentSpec
    goal: str
    inputs: dict[str, Any] = Field(default_factory=dict)


class StepRecord(BaseModel):
    """One entry of the audit trail: a model turn, a tool call, or the goal itself (step 0)."""

    step: int
    role: StepRole
    content: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_kind: str | None = None
    """`function`, `mcp`, `agent` (a delegation to another agent) ..."""
    arguments: dict[str, Any] | None = None
    result: str | None = None
    error: str | None = None
    started_at: datetime
    ended_at: datetime | None = None
    usage: Usage = Field(default_factory=Usage)
    final: bool = False
    """Set on the assistant turn whose text is the run's answer."""

    @property
    def finished(self) -> bool:
        return self.ended_at is not None


class RunState(BaseModel):
    """What the `state` query returns while a run is going, and after."""

    agent: str
    goal: str
    status: RunStatus
    steps: list[StepRecord]
    usage: Usage
    answer: str | None = None
    error: str | None = None


class AgentResult(BaseModel):
    """The workflow result: the answer, why the run stopped, and everything it did."""

    answer: str
    stop_reason: StopReason
    steps: list[StepRecord]
    usage: Usage
    elapsed_seconds: float
    error: str | None = None


EventType = Literal[
    "user_message",
    "tool_call",
    "tool_result",
    "tool_error",
    "delegation_request",
    "delegation_response",
    "delegation_error",
    "agent_response",
    "error",
]


class RunEvent(BaseModel):
    """The run's audit trail in the KAOS memory-event vocabulary."""

    event_id: str
    timestamp: datetime
    event_type: EventType
    content: Any
    metadata: dict[str, Any] = Field(default_factory=dict)
