"""The activities that describe and run tools.

A tool's failure is an answer for the model, not a failure of the run: it is
returned as a `ToolResult` with `is_error` and a hint. Only a
`RetryableToolError` is raised to Temporal, which retries it with backoff.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from collections.abc import AsyncIterator

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.tools.registry import RetryableToolError, ToolArgumentsError, ToolContext, ToolRegistry
from contracts.activities import DescribeToolsRequest, DescribeToolsResult, ToolRequest
from contracts.messages import ToolResult

HEARTBEAT_EVERY_SECONDS = 2.0
ARGUMENTS_HINT = "Check argument names and types and try again."


class ToolActivities:
    """Tool activities bound to one worker's registry."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    @activity.defn(name="describe_tools")
    async def describe_tools(self, request: DescribeToolsRequest) -> DescribeToolsResult:
        """The schemas of the agent's tools, recorded in history so replays see the same list."""
        missing = [name for name in request.agent.tools if name not in self.registry]
        if missing:
            raise ApplicationError(
                f"agent {request.agent.name!r} lists tool(s) {', '.join(missing)} that this worker does not register "
                f"(registered: {', '.join(self.registry.names()) or 'none'}). Start the worker with "
                f"`stalwart worker --tools your.module` where the module defines them with @tool, "
                f"or remove them from the agent file.",
                type="UnknownToolError",
                non_retryable=True,
            )
        tools = [self.registry.get(name).spec() for name in request.agent.tools]  # type: ignore[union-attr]
        return DescribeToolsResult(tools=tools)

    @activity.defn(name="run_tool")
    async def run_tool(self, request: ToolRequest) -> ToolResult:
        call = request.call
        registered = self.registry.get(call.name)
        if registered is None:
            return _error(request, f"No handler registered for tool: {call.name} (kind: {request.tool.kind})", "Call one of the tools you were given.")
        context = ToolContext(idempotency_key=request.idempotency_key, call_id=call.id, run_inputs=request.run_inputs)
        try:
            async with _heartbeating():
                content = await registered(call.arguments, context)
        except RetryableToolError as err:
            raise ApplicationError(f"{call.name}: {err}", type="RetryableToolError") from err
        except ToolArgumentsError as err:
            return _error(request, f"ToolArgumentsError: {err}", ARGUMENTS_HINT)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - every tool failure is feedback for the model
            activity.logger.info("tool %s failed: %s: %s", call.name, type(err).__name__, err)
            return _error(request, f"{type(err).__name__}: {err}", ARGUMENTS_HINT)
        return ToolResult(call_id=call.id, name=call.name, content=content)


def _error(request: ToolRequest, error: str, hint: str) -> ToolResult:
    return ToolResult(
        call_id=request.call.id,
        name=request.call.name,
        content=json.dumps({"error": error, "hint": hint}),
        is_error=True,
    )


@asynccontextmanager
async def _heartbeating() -> AsyncIterator[None]:
    """Heartbeat while a tool runs, so a dead worker is noticed and cancellation reaches the tool."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(HEARTBEAT_EVERY_SECONDS)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
