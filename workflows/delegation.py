"""Delegation: another agent as a tool of this one (a child workflow, or a remote agent over A2A).

Placeholder interface; the implementation lands with the sub-agents work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.agent import AgentSpec
    from contracts.messages import ToolCall, ToolResult, Usage
    from contracts.tools import ToolSpec


@dataclass(frozen=True)
class DelegationContext:
    """Who delegates, and what the sub-agent may still spend of the parent's budgets."""

    parent_id: str
    step: int
    inputs: dict[str, Any] = field(default_factory=dict)
    remaining_tokens: int | None = None
    remaining_seconds: float | None = None
    remaining_cost_usd: float | None = None


@dataclass(frozen=True)
class Delegated:
    result: ToolResult
    usage: Usage


def tool_specs(agent: AgentSpec) -> list[ToolSpec]:
    """One tool (kind `agent`) per agent this agent may delegate to."""
    return []


async def delegate(call: ToolCall, tool: ToolSpec, context: DelegationContext) -> Delegated:
    raise NotImplementedError
