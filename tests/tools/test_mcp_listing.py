"""describe_tools lists an agent's MCP tools: allowlists, the naming rule, and errors that say what to fix."""

from __future__ import annotations

import pytest
from activity_calls import call, describe
from mcp_test_servers import http_demo, stdio_demo
from temporalio.exceptions import ApplicationError

from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools.registry import ToolRegistry, tool
from stalwart.contracts.agent import AgentSpec, McpStdioServer
from stalwart.workers.worker import default_registry


async def test_stdio_server_tools_are_described_as_mcp_tools(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo()]))
    lookup = tools["lookup"]
    assert lookup.kind == "mcp"
    assert lookup.server is not None and lookup.server.name == "demo"
    assert lookup.parameters["properties"]["topic"]["type"] == "string"
    assert lookup.side_effecting is False  # the server marks it read-only
    assert tools["add"].side_effecting is True


async def test_http_server_tools_are_described_as_mcp_tools(tool_activities, http_mcp_url):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[http_demo(http_mcp_url)]))
    assert tools["add"].kind == "mcp"
    assert tools["add"].server is not None and tools["add"].server.transport == "http"


async def test_allowlist_offers_only_the_listed_tools(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo(tools=["lookup", "add"])]))
    assert sorted(tools) == ["add", "lookup"]


async def test_allowlisted_tool_the_server_lacks_fails_with_the_tools_it_offers(tool_activities):
    with pytest.raises(ApplicationError) as caught:
        await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo(tools=["lookup", "nope"])]))
    assert caught.value.non_retryable
    assert "MCP server 'demo' has no tool(s) nope (it offers: add, crash, " in caught.value.message
    assert "fix `tools` of that server in the agent file" in caught.value.message


async def test_mcp_tool_named_like_a_worker_tool_is_prefixed_with_its_server(tool_activities):
    tools = await describe(
        tool_activities, AgentSpec(name="a", tools=["echo"], mcp_servers=[stdio_demo(tools=["echo", "add"])])
    )
    assert sorted(tools) == ["add", "demo__echo", "echo"]
    assert tools["echo"].kind == "function"
    assert (tools["demo__echo"].kind, tools["demo__echo"].remote_name) == ("mcp", "echo")


async def test_tool_offered_by_two_servers_is_prefixed_on_both(tool_activities):
    servers = [stdio_demo("left", tools=["add"]), stdio_demo("right", tools=["add"])]
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=servers))
    assert sorted(tools) == ["left__add", "right__add"]


async def test_tool_name_a_model_api_would_refuse_is_made_safe(tool_activities):
    tools = await describe(tool_activities, AgentSpec(name="a", mcp_servers=[stdio_demo(tools=["kb.search"])]))
    assert list(tools) == ["kb_search"]
    assert tools["kb_search"].remote_name == "kb.search"


@tool(name="kb_search")
def kb_search(topic: str) -> str:
    """A worker tool with the name the server's `kb.search` would be made safe to."""
    return f"worker: {topic}"


async def test_mcp_tool_whose_safe_name_is_a_tool_of_the_agent_is_prefixed():
    activities = ToolActivities(ToolRegistry([kb_search]))
    try:
        tools = await describe(
            activities, AgentSpec(name="a", tools=["kb_search"], mcp_servers=[stdio_demo(tools=["kb.search"])])
        )
    finally:
        await activities.aclose()
    assert sorted(tools) == ["demo__kb_search", "kb_search"]
    assert (tools["demo__kb_search"].kind, tools["demo__kb_search"].remote_name) == ("mcp", "kb.search")


async def test_mcp_tool_is_renamed_only_on_a_real_clash_within_the_agent():
    """Issue 11, defect 2: the worker registers `echo` and `kb_search`, the agent uses neither: the MCP tools keep
    their names (`echo`, not `demo__echo`), and a call of each reaches the MCP server, not the worker's tool."""
    registry = default_registry()
    registry.register(kb_search)
    activities = ToolActivities(registry)
    try:
        assert "echo" in activities.registry.names()
        tools = await describe(activities, AgentSpec(name="a", mcp_servers=[stdio_demo(tools=["echo", "kb.search"])]))
        assert sorted(tools) == ["echo", "kb_search"]
        echoed = await call(activities, tools["echo"], {"text": "hi"})
        searched = await call(activities, tools["kb_search"], {"query": "q"})
    finally:
        await activities.aclose()
    assert (echoed.is_error, echoed.content) == (False, "mcp echo: hi")
    assert (searched.is_error, searched.content) == (False, "kb results for q")


@tool(name="demo__add")
def prefixed_add(a: int) -> int:
    """A worker tool whose name is what the prefixing rule produces for the server's `add`."""
    return a


@tool(name="add")
def add(a: int) -> int:
    """Takes the name `add`, so the server's `add` is prefixed."""
    return a


async def test_prefixed_name_that_is_already_taken_fails_clearly_naming_both_sources():
    activities = ToolActivities(ToolRegistry([prefixed_add, add]))
    try:
        with pytest.raises(ApplicationError) as caught:
            await describe(
                activities, AgentSpec(name="a", tools=["add", "demo__add"], mcp_servers=[stdio_demo(tools=["add"])])
            )
    finally:
        await activities.aclose()
    assert caught.value.non_retryable
    assert "'demo__add' comes from the agent's `tools` and MCP server 'demo' (tool 'add')" in caught.value.message


async def test_server_command_that_does_not_exist_fails_with_the_fix(tool_activities):
    server = McpStdioServer(name="ghost", command="no-such-mcp-server-command")
    with pytest.raises(ApplicationError) as caught:
        await describe(tool_activities, AgentSpec(name="a", mcp_servers=[server]))
    assert caught.value.non_retryable
    assert "cannot start `no-such-mcp-server-command`" in caught.value.message
    assert "Fix `command` in the agent file" in caught.value.message
