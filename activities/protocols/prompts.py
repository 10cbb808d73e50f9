"""The KAOS seed prompts of the text action protocols, word for word (seeds 000 and 001)."""

from __future__ import annotations

import json

from stalwart.contracts.tools import ToolSpec

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

JSON_AGENT_INSTRUCTIONS = """To delegate a task to another agent, respond with ONLY this JSON (no other text):
{"agent": "agent_name", "task": "task description"}

Wait for the agent's response before providing your final answer."""

FENCED_AGENT_INSTRUCTIONS = """To delegate a task to another agent, respond with:
```delegate
{"agent": "agent_name", "task": "task description"}
```
Wait for the agent's response before providing your final answer."""


def agent_names(tools: list[ToolSpec]) -> frozenset[str]:
    """The tools that are other agents (kind `agent`): the protocols offer them for delegation, not as tools."""
    return frozenset(t.name for t in tools if t.kind == "agent")


def agents_description(agents: list[ToolSpec]) -> str:
    """`- **name**: description` per agent."""
    return "\n".join(f"- **{a.name}**: {a.description}" for a in agents)


def _sections(tools: list[ToolSpec], tools_instructions: str, agent_instructions: str) -> list[str]:
    """The seed's `## Available Tools` and `## Available Agents for Delegation` sections, each only when it has
    entries."""
    functions = [t for t in tools if t.kind != "agent"]
    agents = [t for t in tools if t.kind == "agent"]
    parts: list[str] = []
    if functions:
        parts += ["\n## Available Tools\n" + tools_description(functions), tools_instructions]
    if agents:
        parts += ["\n## Available Agents for Delegation\n" + agents_description(agents), agent_instructions]
    return parts


def tools_description(tools: list[ToolSpec]) -> str:
    """`- **name**: description` per tool, with its parameters as JSON."""
    return "\n".join(f"- **{t.name}**: {t.description}\n  Parameters: {json.dumps(t.parameters)}" for t in tools)


def json_system_prompt(instructions: str, tools: list[ToolSpec]) -> str:
    """Seed 000: instructions, the tools and how to call them, then how to say "no action"."""
    if not tools:
        return instructions
    return "\n".join(
        [instructions, *_sections(tools, JSON_TOOLS_INSTRUCTIONS, JSON_AGENT_INSTRUCTIONS), NO_ACTION_INSTRUCTIONS]
    )


def fenced_system_prompt(instructions: str, tools: list[ToolSpec]) -> str:
    """Seed 001: instructions, the tools, and the fenced `tool_call` block format."""
    if not tools:
        return instructions
    return "\n".join([instructions, *_sections(tools, FENCED_TOOLS_INSTRUCTIONS, FENCED_AGENT_INSTRUCTIONS)])
