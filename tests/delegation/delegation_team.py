"""Agents and tools shared by the delegation tests: a lead that delegates, and the sub-agents it delegates to."""

from __future__ import annotations

from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SubAgent

from support.hour_long_tool import tool_started

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


def blocked_researcher() -> AgentSpec:
    """A researcher whose one step is an hour-long job,
    so it is still working when the test acts (see `tool_started`)."""
    tool_started.clear()
    return researcher(ScriptedReply(tool_calls=[call("hour_long_job", topic="qubits")]), tools=["hour_long_job"])
