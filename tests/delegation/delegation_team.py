"""Agents and tools shared by the delegation tests: a lead that delegates, and the sub-agents it delegates to."""

from __future__ import annotations

import asyncio

from activities.tools import tool
from contracts import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from contracts.agent import SubAgent

RESEARCH = "Quantum computers use qubits."


def call(name: str, **arguments: object) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, arguments=arguments)


def researcher(*replies: ScriptedReply, tools: list[str] | None = None, **budgets: object) -> AgentSpec:
    return AgentSpec(
        name="researcher",
        description="Finds facts.",
        tools=tools or [],
        scripted=list(replies) or [ScriptedReply(text=RESEARCH)],
        budgets=Budgets(**budgets),
    )


def lead(*replies: ScriptedReply, sub: AgentSpec | None = None, mode: str = "agentic", **fields: object) -> AgentSpec:
    """A lead agent whose sub-agent `researcher` is `sub` (by default one that answers RESEARCH)."""
    return AgentSpec(
        name="lead",
        sub_agents=[SubAgent(name="researcher", spec=sub or researcher(), mode=mode)],  # type: ignore[arg-type]
        scripted=list(replies),
        **fields,  # type: ignore[arg-type]
    )


def delegating(task: str = "Find quantum info") -> ScriptedReply:
    return ScriptedReply(tool_calls=[call("researcher", task=task)])


def child_id(parent_id: str, step: int = 1, call_id: str = "call_1_1") -> str:
    """The workflow id the lead gives the researcher's run for the call `call_id` of step `step`."""
    return f"{parent_id}/researcher/{step}-{call_id}"


tool_started = asyncio.Event()


# The heartbeat timeout outlasts any time the test server skips while the run is waited on.
@tool(timeout_seconds=7200, heartbeat_timeout_seconds=600)
async def hour_long_search(topic: str) -> str:
    """Searches for an hour.

    Args:
        topic: What to search.
    """
    tool_started.set()
    await asyncio.sleep(3600)
    return "found"


def blocked_researcher() -> AgentSpec:
    """A researcher whose one step is an hour-long search, so it is still working when the test acts (see `tool_started`)."""
    tool_started.clear()
    return researcher(ScriptedReply(tool_calls=[call("hour_long_search", topic="qubits")]), tools=["hour_long_search"])
