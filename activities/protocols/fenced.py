"""The KAOS fenced-block protocol (seed 001): a ```` ```tool_call ```` block holding `{"tool": ..., "arguments": ...}`.

A reply without a block is the final answer. Every block of a reply is a
call (parallel calls); a block whose JSON does not parse is answered with a
note to the model.
"""

from __future__ import annotations

import json
import re

from activities.protocols.prompts import FENCED_TOOLS_INSTRUCTIONS
from activities.protocols.reading import Reading, tool_call

BLOCK = re.compile(r"```tool_call\s*\n(\{.*?\})\s*\n```", re.DOTALL)
FENCE = "```"
OPENING = "```tool_call"


def read(content: str, step: int) -> Reading:
    """The tool calls of a reply's `tool_call` blocks; none means the reply is the answer."""
    blocks = BLOCK.findall(content)
    if not blocks:
        if OPENING in content:
            return Reading(feedback=f"Your tool_call block is not complete. {FENCED_TOOLS_INSTRUCTIONS}")
        return Reading()
    reading = Reading()
    for n, block in enumerate(blocks, start=1):
        try:
            action = json.loads(block)
        except json.JSONDecodeError as err:
            return Reading(feedback=f"Your tool_call block is not valid JSON ({err.msg}). {FENCED_TOOLS_INSTRUCTIONS}")
        if not isinstance(action, dict) or "tool" not in action:
            return Reading(feedback=f'A tool_call block must hold {{"tool": ..., "arguments": ...}}. {FENCED_TOOLS_INSTRUCTIONS}')
        one = tool_call(action, step, n, FENCED_TOOLS_INSTRUCTIONS)
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
