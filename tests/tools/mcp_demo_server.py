"""An MCP server for the tests, written with the `mcp` package: run as a script it serves stdio.

The HTTP tests serve the same server over streamable HTTP (`build_server()`
in a uvicorn thread), so both transports are tested against one tool set.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

FACTS = {"temporal": "Temporal replays workflow history to rebuild state.", "mcp": "MCP carries tools over JSON-RPC."}


def build_server() -> MCPServer:
    server = MCPServer("demo")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(topic: str) -> str:
        """Look up a fact about a topic."""
        return FACTS.get(topic.lower(), f"no fact about {topic}")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def pid() -> int:
        """The server's process id, to tell one server process from the next."""
        return os.getpid()

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def crash_once(marker: str) -> str:
        """Kill the server the first time (leaving `marker` as a file), answer the next time."""
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(3)
        return "answered after a restart"

    @server.tool()
    def fail(reason: str) -> str:
        """Fail with the given reason, reported as a tool error (isError)."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def echo(text: str) -> str:
        """Echo from the MCP server (its name clashes with the worker's built-in echo)."""
        return f"mcp echo: {text}"

    @server.tool(name="kb.search")
    def kb_search(query: str) -> str:
        """A tool whose name has a dot, which model APIs refuse in tool names."""
        return f"kb results for {query}"

    @server.tool()
    def weather(city: str, unit: str) -> str:
        """Today's weather in a city, in the given unit."""
        return f"{city}: 21 degrees {unit}"

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP request header (empty over stdio)."""
        request = ctx.request_context.request
        return "" if request is None else request.headers.get(name, "")

    return server


if __name__ == "__main__":
    build_server().run()
