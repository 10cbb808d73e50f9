"""Run the tool activities the way a worker does, in a real activity context (ActivityEnvironment),
without a workflow."""

from __future__ import annotations

from typing import Any

from temporalio.testing import ActivityEnvironment

from stalwart.activities.tool_activities import ToolActivities
from stalwart.contracts.activities import DescribeToolsRequest, ToolRequest
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import ToolCall, ToolResult
from stalwart.contracts.tools import ToolSpec


async def describe(activities: ToolActivities, agent: AgentSpec) -> dict[str, ToolSpec]:
    result = await ActivityEnvironment().run(activities.describe_tools, DescribeToolsRequest(agent=agent))
    return {tool.name: tool for tool in result.tools}


async def call(
    activities: ToolActivities,
    tool: ToolSpec,
    arguments: dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
) -> ToolResult:
    request = ToolRequest(
        call=ToolCall(id="call_1", name=tool.name, arguments=arguments or {}),
        tool=tool,
        idempotency_key=f"test/{tool.name}",
        run_inputs=inputs or {},
    )
    return await ActivityEnvironment().run(activities.run_tool, request)
