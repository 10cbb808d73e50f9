"""MCP tools: an agent's MCP servers, reached over stdio or streamable HTTP, offered to its model as tools."""

from activities.mcp import catalog
from activities.mcp.errors import McpConfigError, McpServerExited, McpToolError, McpUnavailable
from activities.mcp.pool import McpPool
from activities.mcp.results import render

__all__ = ["McpConfigError", "McpPool", "McpServerExited", "McpToolError", "McpUnavailable", "catalog", "render"]
