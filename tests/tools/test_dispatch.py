"""run_tool's two-layer dispatch (Prompty): a handler by name wins, else by kind, else the seed's message."""

from __future__ import annotations

from typing import Any

from activity_calls import call

from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools.registry import ToolContext, ToolRegistry, tool
from stalwart.contracts.tools import ToolSpec


async def _by_kind(spec: ToolSpec, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    return {"handled_by": "kind", "tool": spec.name, "arguments": arguments}


@tool(name="forecast")
def forecast_by_name(city: str) -> str:
    """Answers `forecast` by name."""
    return f"by name: {city}"


async def test_handler_registered_under_the_tool_name_wins_over_its_kind():
    registry = ToolRegistry([forecast_by_name])
    registry.register_kind("openapi", _by_kind)
    result = await call(ToolActivities(registry), ToolSpec(name="forecast", kind="openapi"), {"city": "Oslo"})
    assert result.content == "by name: Oslo"


async def test_tool_without_a_name_handler_runs_on_its_kind_handler():
    registry = ToolRegistry()
    registry.register_kind("openapi", _by_kind)
    result = await call(ToolActivities(registry), ToolSpec(name="forecast", kind="openapi"), {"city": "Oslo"})
    assert result.data == {"handled_by": "kind", "tool": "forecast", "arguments": {"city": "Oslo"}}


async def test_tool_without_any_handler_gets_the_seed_message():
    result = await call(ToolActivities(ToolRegistry()), ToolSpec(name="forecast", kind="openapi"), {"city": "Oslo"})
    assert result.is_error
    assert result.error == "No handler registered for tool: forecast (kind: openapi)"


async def test_registered_mcp_kind_handler_replaces_the_built_in_mcp_client():
    registry = ToolRegistry()
    registry.register_kind("mcp", _by_kind)
    result = await call(ToolActivities(registry), ToolSpec(name="lookup", kind="mcp"), {"topic": "x"})
    assert result.data["handled_by"] == "kind"
