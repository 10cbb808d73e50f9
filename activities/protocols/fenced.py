"""The KAOS fenced-block protocol (seed 001): a ```` ```tool_call ```` block holding `{"tool": ..., "arguments": ...}`,
or a ```` ```delegate ```` block holding `{"agent": ..., "task": ...}`.

A reply without a block is the final answer. Every block of a reply is a
call (parallel calls); as in the seed, `tool_call` blocks are looked for
before `delegate` blocks. A block whose JSON does not parse is answered with
a note to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import Any

from stalwart.activities.protocols.prompts import FENCED_AGENT_INSTRUCTIONS, FENCED_TOOLS_INSTRUCTIONS
from stalwart.activities.protocols.reading import Reading, delegation_call, tool_call
from stalwart.contracts.agent import LoopSettings

BLOCK = re.compile(r"```tool_call\s*\n(\{.*?\})\s*\n```", re.DOTALL)
DELEGATE_BLOCK = re.compile(r"```delegate\s*\n(\{.*?\})\s*\n```", re.DOTALL)
FENCE = "```"
OPENING = "```tool_call"
DELEGATE_OPENING = "```delegate"


def read(content: str, step: int, agents: Collection[str] = (), loop: LoopSettings | None = None) -> Reading:
    """The calls of a reply's `tool_call` blocks, else of its `delegate` blocks; none means the reply is the answer.

    As in seed 001, a kind that `loop` disables (`enable_tools`, `enable_delegation`) is not looked for: a reply
    holding only such blocks is the final response.
    """
    loop = loop or LoopSettings()

    def tool(action: dict[str, Any], n: int) -> Reading | None:
        return tool_call(action, step, n, FENCED_TOOLS_INSTRUCTIONS) if "tool" in action else None

    def delegation(action: dict[str, Any], n: int) -> Reading:
        return delegation_call(action, step, n, agents, FENCED_AGENT_INSTRUCTIONS)

    blocks = BLOCK.findall(content) if loop.enable_tools else []
    if blocks:
        return _calls(blocks, "tool_call", '{"tool": ..., "arguments": ...}', FENCED_TOOLS_INSTRUCTIONS, tool)
    if loop.enable_tools and OPENING in content:
        return Reading(feedback=f"Your tool_call block is not complete. {FENCED_TOOLS_INSTRUCTIONS}")
    blocks = DELEGATE_BLOCK.findall(content) if loop.enable_delegation else []
    if blocks:
        return _calls(blocks, "delegate", '{"agent": ..., "task": ...}', FENCED_AGENT_INSTRUCTIONS, delegation)
    if loop.enable_delegation and DELEGATE_OPENING in content:
        return Reading(feedback=f"Your delegate block is not complete. {FENCED_AGENT_INSTRUCTIONS}")
    return Reading()


def _calls(
    blocks: list[str], kind: str, shape: str, instructions: str, call: Callable[[dict[str, Any], int], Reading | None]
) -> Reading:
    """Every block of one kind as a call (parallel calls); the first malformed block is answered with a note instead."""
    reading = Reading()
    for n, block in enumerate(blocks, start=1):
        try:
            action = json.loads(block)
        except json.JSONDecodeError as err:
            return Reading(feedback=f"Your {kind} block is not valid JSON ({err.msg}). {instructions}")
        one = call(action, n) if isinstance(action, dict) else None
        if one is None:
            return Reading(feedback=f"A {kind} block must hold {shape}. {instructions}")
        if one.feedback is not None:
            return one
        reading.tool_calls += one.tool_calls
    return reading


def shown_part(text: str) -> str:
    """The part of a reply that may be streamed before it is known to call no tool: everything before a fence."""
    cut = text.find(FENCE)
    if cut >= 0:
        return text[:cut]
    stripped = text.rstrip("`")
    return stripped
