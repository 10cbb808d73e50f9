"""The tool names an agent's model will see, for `stalwart check`: its own tools, its sub-agents, and its MCP
servers' tools after the naming rule (`activities/mcp/catalog.py`), listed from the servers themselves."""

from __future__ import annotations

from dataclasses import dataclass

from stalwart.contracts.agent import AgentSpec


@dataclass(frozen=True)
class ListedTools:
    lines: list[str]
    """One per tool the model will see (name, then where it comes from), and one per MCP server that could not be
    listed from here, saying why."""
    names: list[str] | None
    """Every name the model will see; None when an MCP server could not be listed from here."""


def own_tools(spec: AgentSpec) -> ListedTools:
    """The tools a worker registers and the sub-agents: all the model sees of an agent without MCP servers."""
    lines = [f"{name}  (a tool the worker registers)" for name in spec.tools]
    lines += [f"{sub.name}  (sub-agent, {sub.mode})" for sub in spec.sub_agents]
    return ListedTools(lines, [*spec.tools, *(sub.name for sub in spec.sub_agents)])


async def listed_tools(spec: AgentSpec) -> ListedTools:
    """The agent's tools as its model will see them, its MCP servers' listed from the servers themselves."""
    own = own_tools(spec)
    if not spec.mcp_servers:
        return own
    import asyncio

    from stalwart.activities.mcp import McpPool, catalog  # the MCP SDK: only for agents that use MCP servers

    assert own.names is not None
    lines = list(own.lines)
    pool = McpPool()
    try:
        listed = await asyncio.gather(*(pool.list_tools(server) for server in spec.mcp_servers), return_exceptions=True)
    finally:
        await pool.aclose()
    reachable = []
    for server, tools in zip(spec.mcp_servers, listed, strict=True):
        if isinstance(tools, BaseException):
            lines.append(
                f"MCP server {server.name!r}: not listed from here ({tools}); a worker lists it when a run starts"
            )
        else:
            reachable.append((server, tools))
    try:
        specs = catalog.tool_specs(reachable, own=own.names)
    except Exception as err:
        return ListedTools([*lines, f"MCP tools: {err}"], None)
    for tool in specs:
        assert tool.server is not None
        renamed = f", renamed from {tool.remote_name!r} to avoid a clash" if tool.remote_name else ""
        lines.append(f"{tool.name}  (MCP server {tool.server.name!r}{renamed})")
    every_server_listed = len(reachable) == len(spec.mcp_servers)
    return ListedTools(lines, [*own.names, *(tool.name for tool in specs)] if every_server_listed else None)
