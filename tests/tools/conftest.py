"""Fixtures for the tool tests: the worker's tool activities, and a real MCP server over streamable HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from mcp_test_servers import http_demo_url

from stalwart.activities.tool_activities import ToolActivities
from stalwart.workers.worker import default_registry


@pytest.fixture(scope="module")
async def tool_activities() -> AsyncIterator[ToolActivities]:
    """The tool activities of a worker with the built-in tools, shared by a module's tests as a worker shares them
    between runs; its MCP servers are stopped after the module."""
    activities = ToolActivities(default_registry())
    yield activities
    await activities.aclose()


@pytest.fixture(scope="session")
def http_mcp_url() -> Iterator[str]:
    with http_demo_url() as url:
        yield url
