"""MCP tools: an agent's MCP servers, reached over stdio or streamable HTTP, offered to its model as tools."""

from stalwart.activities.mcp import catalog
from stalwart.activities.mcp.errors import (
    McpConfigError,
    McpHandshakeTimeout,
    McpServerExited,
    McpToolError,
    McpUnavailable,
)
from stalwart.activities.mcp.pool import McpPool
from stalwart.activities.mcp.results import render

__all__ = [
    "McpConfigError",
    "McpHandshakeTimeout",
    "McpPool",
    "McpServerExited",
    "McpToolError",
    "McpUnavailable",
    "catalog",
    "render",
]
