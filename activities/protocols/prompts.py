"""The KAOS seed prompts of the text action protocols, word for word (seeds 000 and 001)."""

from __future__ import annotations

import json

from contracts.tools import ToolSpec

JSON_TOOLS_INSTRUCTIONS = """To use a tool, respond with ONLY this JSON (no other text):
{"tool": "tool_name", "arguments": {"arg1": "value1"}}

Wait for the tool result before providing your final answer."""

NO_ACTION_INSTRUCTIONS = """When you have all the information needed to provide a final answer, respond with ONLY:
{}

Then the system will ask you to provide your final response."""

FENCED_TOOLS_INSTRUCTIONS = """To use a tool, respond with a JSON block in this exact format:
```tool_call
{"tool": "tool_name", "arguments": {"arg1": "value1"}}
```
Wait for the tool result before providing your final answer."""


def tools_description(tools: list[ToolSpec]) -> str:
    """`- **name**: description` per tool, with its parameters as JSON."""
    return "\n".join(f"- **{t.name}**: {t.description}\n  Parameters: {json.dumps(t.parameters)}" for t in tools)


def json_system_prompt(instructions: str, tools: list[ToolSpec]) -> str:
    """Seed 000: instructions, the tools and how to call them, then how to say "no action"."""
    if not tools:
        return instructions
    return "\n".join([instructions, "\n## Available Tools\n" + tools_description(tools), JSON_TOOLS_INSTRUCTIONS, NO_ACTION_INSTRUCTIONS])


def fenced_system_prompt(instructions: str, tools: list[ToolSpec]) -> str:
    """Seed 001: instructions, the tools, and the fenced `tool_call` block format."""
    if not tools:
        return instructions
    return "\n".join([instructions, "\n## Available Tools\n" + tools_description(tools), FENCED_TOOLS_INSTRUCTIONS])
