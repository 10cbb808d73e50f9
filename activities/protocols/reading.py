"""What a text protocol read in a model's reply."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from stalwart.contracts.messages import ToolCall


@dataclass
class Reading:
    """Tool calls to run, a request for the final answer, or a note about a malformed action."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    wants_final_answer: bool = False
    feedback: str | None = None


def tool_call(action: dict[str, Any], step: int, n: int, reminder: str) -> Reading:
    """The tool call an action object names; malformed arguments become the call's `arguments_error`."""
    name = action.get("tool")
    if not isinstance(name, str) or not name:
        return Reading(feedback=f'The "tool" field must be the name of a tool, got {json.dumps(name)}. {reminder}')
    arguments = action.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    call_id = f"call_{step}_{n}"
    if not isinstance(arguments, dict):
        problem = f'"arguments" must be a JSON object, got {json.dumps(arguments)[:200]}.'
        return Reading(tool_calls=[ToolCall(id=call_id, name=name, arguments_error=problem)])
    return Reading(tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)])


def delegation_call(action: dict[str, Any], step: int, n: int, agents: Collection[str], reminder: str) -> Reading:
    """A delegation `{"agent": ..., "task": ...}` as a call of the agent's tool (kind `agent`), taking the `task`."""
    if not agents:
        return Reading(feedback=f"This agent cannot delegate to other agents. {reminder}")
    name = action.get("agent")
    if not isinstance(name, str) or name not in agents:
        known = ", ".join(sorted(agents))
        return Reading(feedback=f"There is no agent named {json.dumps(name)}; delegate to one of: {known}. {reminder}")
    task = action.get("task")
    if not isinstance(task, str) or not task.strip():
        return Reading(feedback=f'A delegation needs a "task": a string saying what the agent should do. {reminder}')
    return Reading(tool_calls=[ToolCall(id=f"call_{step}_{n}", name=name, arguments={"task": task})])
