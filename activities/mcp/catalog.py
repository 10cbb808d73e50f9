"""MCP tools as the loop's `ToolSpec`s, and the rule that keeps every tool name unambiguous.

Naming policy: an MCP tool keeps its own name unless that name is taken
within the agent - by one of the agent's `tools` or sub-agents, or by a tool
of another of the agent's MCP servers. Then every MCP tool of that name is
offered as `<server>__<tool>`. A tool the worker registers but the agent
does not use takes no name: calls of an MCP tool go to its server whatever
the worker registers (`ToolActivities.run_tool`). The agent's own `tools` never change name. Characters
that model APIs refuse in tool names (anything but letters, digits, `_` and
`-`) become `_`. If a name is still not unique after that, describing the
tools fails and says which tools clash and how to drop one (a server's
`tools` allowlist).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence

from mcp.types import Tool

from stalwart.activities.mcp.errors import McpConfigError
from stalwart.contracts.agent import McpServerSpec
from stalwart.contracts.tools import ToolSpec

SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def allowed(spec: McpServerSpec, tools: Sequence[Tool]) -> list[Tool]:
    """The server's tools that its allowlist admits; an allowlisted tool it does not offer is an error."""
    if spec.tools is None:
        return list(tools)
    offered = {tool.name for tool in tools}
    missing = [name for name in spec.tools if name not in offered]
    if missing:
        raise McpConfigError(
            f"MCP server {spec.name!r} has no tool(s) {', '.join(missing)} "
            f"(it offers: {', '.join(sorted(offered)) or 'none'}); "
            f"fix `tools` of that server in the agent file"
        )
    return [tool for tool in tools if tool.name in spec.tools]


def tool_specs(servers: Sequence[tuple[McpServerSpec, Sequence[Tool]]], own: Collection[str]) -> list[ToolSpec]:
    """ToolSpecs for the servers' (allowed) tools, named by the policy above.

    `own` is the agent's own tool and sub-agent names, which the result must not repeat.
    """
    kept = [(spec, tool) for spec, tools in servers for tool in allowed(spec, tools)]
    counts = Counter(_safe(tool.name) for _, tool in kept)
    specs = []
    for spec, tool in kept:
        # Clashes are judged on the name the model will see (and the worker dispatch on), not the raw one.
        name = _safe(tool.name)
        if counts[name] > 1 or name in own:
            name = _safe(f"{spec.name}{SEPARATOR}{tool.name}")
        specs.append(_spec(spec, tool, name))
    _check_unique(specs, own)
    return specs


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name)


def _spec(server: McpServerSpec, tool: Tool, name: str) -> ToolSpec:
    schema = dict(tool.input_schema)
    schema.pop("title", None)
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)
    return ToolSpec(
        name=name,
        description=tool.description or tool.title or "",
        parameters=schema,
        kind="mcp",
        side_effecting=not read_only,
        server=server,
        remote_name=tool.name if name != tool.name else None,
    )


def _check_unique(specs: Sequence[ToolSpec], own: Collection[str]) -> None:
    owners: dict[str, list[str]] = {name: ["the agent's `tools`"] for name in own}
    for spec in specs:
        assert spec.server is not None
        owners.setdefault(spec.name, []).append(
            f"MCP server {spec.server.name!r} (tool {spec.remote_name or spec.name!r})"
        )
    clashes = {name: where for name, where in owners.items() if len(where) > 1}
    if clashes:
        detail = "; ".join(f"{name!r} comes from {' and '.join(where)}" for name, where in sorted(clashes.items()))
        raise McpConfigError(
            f"tool names are ambiguous even after prefixing with server names: {detail}. "
            f"Drop one with a server's `tools` allowlist, or rename a server."
        )
