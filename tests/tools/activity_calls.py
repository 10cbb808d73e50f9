"""Run the tool activities the way a worker does, in a real activity context (ActivityEnvironment),
without a workflow."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from temporalio.testing import ActivityEnvironment

from stalwart.activities.tool_activities import ToolActivities
from stalwart.contracts.activities import DescribeToolsRequest, ToolRequest
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import ToolCall, ToolResult
from stalwart.contracts.tools import ToolSpec

_ACTIVITY_IDS = itertools.count(1)


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
    environment = ActivityEnvironment()
    # Each call its own activity, as in a run: a worker joins the attempts of one activity id into one call.
    environment.info = dataclasses.replace(environment.info, activity_id=f"call-{next(_ACTIVITY_IDS)}")
    return await environment.run(activities.run_tool, request)
