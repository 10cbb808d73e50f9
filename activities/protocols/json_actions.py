"""The KAOS two-phase JSON action protocol (seed 000): `{"tool": ...}` to act, `{}` when done.

Parsing follows the seed's source: the whole reply as JSON, else the first
balanced `{...}` in the text that parses; nothing found means "no action", so
a reply whose JSON does not parse moves on to the final response, as in the
seed. An object that names a tool or an agent but is malformed (a "tool" that
is not a name, an unknown agent, a missing task) is answered with a note to
the model: the seed would fail that action, and its failure is fed back too.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from stalwart.activities.protocols.prompts import (
    JSON_AGENT_INSTRUCTIONS,
    JSON_TOOLS_INSTRUCTIONS,
    NO_ACTION_INSTRUCTIONS,
)
from stalwart.activities.protocols.reading import Reading, delegation_call, tool_call
from stalwart.contracts.agent import LoopSettings

REMINDER = f"{JSON_TOOLS_INSTRUCTIONS}\n\n{NO_ACTION_INSTRUCTIONS}"
AGENT_REMINDER = f"{JSON_AGENT_INSTRUCTIONS}\n\n{NO_ACTION_INSTRUCTIONS}"


def parse_action(content: str) -> dict[str, Any] | None:
    """The action object of a reply: the reply itself as JSON, else its first balanced `{...}` that parses."""
    content = content.strip()
    try:
        parsed = json.loads(content)
        if isinstance(parsed, dict):
            return parsed
    except json.JSONDecodeError:
        pass
    for candidate in balanced_objects(content):
        try:
            parsed = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(parsed, dict):
            return parsed
    return None


def balanced_objects(text: str) -> list[str]:
    """Every top-level `{...}` span with balanced braces, strings respected, in order."""
    spans: list[str] = []
    depth, start, in_string, escaped = 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def read(content: str, step: int, agents: Collection[str] = (), loop: LoopSettings | None = None) -> Reading:
    """What a phase-1 reply asks for: a tool call, a delegation to one of `agents`, the final answer
    (`{}` or no action), or a correction. An action of a kind `loop` disables is no action (seed 001's flags)."""
    loop = loop or LoopSettings()
    action = parse_action(content)
    if action is None:
        return Reading(wants_final_answer=True)
    if "tool" in action and loop.enable_tools:
        return tool_call(action, step, 1, REMINDER)
    if "agent" in action and loop.enable_delegation:
        return delegation_call(action, step, 1, agents, AGENT_REMINDER if agents else REMINDER)
    return Reading(wants_final_answer=True)
