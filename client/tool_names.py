"""The tool names an agent's model will see, for `stalwart check`: its own tools, its sub-agents, and its MCP
servers' tools after the naming rule (`activities/mcp/catalog.py`), listed from the servers themselves."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from stalwart.contracts.agent import AgentSpec

BUILTIN_TOOLS: dict[str, tuple[str, ...]] = {
    "calculator": ("expression",),
    "echo": ("text",),
    "http_get": ("url",),
    "read_file": ("path",),
}
"""The built-in tools (`activities/tools/builtin.py`), which every worker's default registry holds, each with its
parameters: what `check` knows of an agent's tools without a worker. Written out rather than imported, as importing
them brings their HTTP client, a tenth of `check`'s start; tests/test_check_tool_names.py holds them to the registry."""


@dataclass(frozen=True)
class ListedTools:
    lines: list[str]
    """One per tool the model will see (name, then where it comes from), and one per MCP server that could not be
    listed from here, saying why."""
    names: list[str] | None
    """Every name the model will see; None when an MCP server could not be listed from here."""


def own_tools(spec: AgentSpec) -> ListedTools:
    """The tools a worker registers and the sub-agents: all the model sees of an agent without MCP servers."""
    lines = [f"{name}  (a tool the worker registers{_builtin_hint(name)})" for name in spec.tools]
    lines += [f"{sub.name}  (sub-agent, {sub.mode})" for sub in spec.sub_agents]
    return ListedTools(lines, [*spec.tools, *(sub.name for sub in spec.sub_agents)])


def _builtin_hint(name: str) -> str:
    """For a name that is no built-in tool but close to one (`calculater`), which one it may mean: a worker may
    register a tool of that name, so it is no error, but a run on a worker without one fails."""
    if name in BUILTIN_TOOLS:
        return ""
    close = difflib.get_close_matches(name, BUILTIN_TOOLS, n=1)
    return f"; no built-in tool has that name: did you mean `{close[0]}`?" if close else ""


def binding_problems(spec: AgentSpec, *, where: str = "") -> list[str]:
    """`[bindings]` of a built-in tool that bind a parameter the tool does not take (`expressio`), as a run would
    refuse them; a tool only a worker registers is not known here, so its bindings are left to the run. `where` is
    the agent's place in the team (`sub_agents.0.spec.`)."""
    problems = []
    for tool, binding in spec.bindings.items():
        takes = BUILTIN_TOOLS.get(tool, ())
        unknown = sorted(param for param in binding if param not in takes)
        if tool not in BUILTIN_TOOLS or not unknown:
            continue
        close = [match for param in unknown for match in difflib.get_close_matches(param, takes, n=1)]
        fix = f"did you mean {', '.join(f'`{name}`' for name in close)}?" if close else "fix the name"
        problems.append(
            f"field `{where}bindings.{tool}` binds parameter(s) {', '.join(unknown)} that the built-in tool {tool} "
            f"does not take (its parameters: {', '.join(takes)}), which a run refuses: {fix}"
        )
    return problems


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
