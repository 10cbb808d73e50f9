"""The activities that describe and run tools.

A tool's failure is an answer for the model, not a failure of the run: it is
returned as a `ToolResult` with `is_error` and a hint. Only a
`RetryableToolError` is raised to Temporal, which retries it with backoff.

Dispatch follows Prompty's two layers: a handler registered under the tool's
name wins, else the handler for the tool's kind (the worker's registry first,
then the built-in "mcp" kind), else the model is told no handler exists.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from stalwart.activities import telemetry
from stalwart.activities.budget_guard import refuse_after
from stalwart.activities.call_records import CallRecords
from stalwart.activities.heartbeats import heartbeating
from stalwart.activities.in_flight import InFlight
from stalwart.activities.mcp import (
    McpConfigError,
    McpHandshakeTimeout,
    McpPool,
    McpServerExited,
    McpToolError,
    McpUnavailable,
    catalog,
    render,
)
from stalwart.activities.retried_calls import FastToolFailures
from stalwart.activities.secrets import redact_value
from stalwart.activities.tools.registry import (
    RetryableToolError,
    ToolArgumentsError,
    ToolContext,
    ToolRegistry,
)
from stalwart.activities.transcripts import TranscriptStore, goes_inline
from stalwart.contracts import failure_types
from stalwart.contracts.activities import DescribeToolsRequest, DescribeToolsResult, ToolRequest
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.errors import UsageError
from stalwart.contracts.messages import TOOL_ERROR_HINT, ToolCall, ToolResult
from stalwart.contracts.names import DESCRIBE_TOOLS_ACTIVITY, RUN_TOOL_ACTIVITY
from stalwart.contracts.tools import ToolSpec

HEARTBEAT_EVERY_SECONDS = 2.0
FINISHED_RESULTS_KEPT = 256
FINISHED_RESULT_MAX_CHARS = 256 * 1024
"""Results kept to answer a repeated attempt (see `ToolActivities.run_tool`): the latest few, none huge."""
MISSING_INPUT_HINT = (
    "This tool needs a value the user gives when starting the run; tell the user which input is missing."
)


class BindingError(UsageError, ValueError):
    """The agent's [bindings] name a tool or parameter that does not exist; the agent file must change."""


class ToolActivities:
    """Tool activities bound to one worker's registry and its MCP connections."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        mcp: McpPool | None = None,
        transcripts: Callable[[], TranscriptStore] | None = None,
    ) -> None:
        self.registry = registry
        self.mcp = mcp or McpPool()
        self._transcripts = transcripts
        """The worker's transcript store (opened on first use), which keeps large results; None keeps them inline."""
        self._finished: OrderedDict[tuple[str | None, str], ToolResult] = OrderedDict()
        """Results of calls this worker finished, by (run id, activity id): a completion lost to a server outage
        (the SDK stops retrying it after about 10 s) brings the call back as a new attempt, answered from here."""
        self._in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult))
        """Calls running here: a new attempt of one (the server timed out the last during an outage) joins it, here
        or, through their records in storage, on another worker."""
        self._fast_failures = FastToolFailures()
        """How fast tool calls retrying here failed: one refused past the deadline names it."""

    async def aclose(self) -> None:
        await self.mcp.aclose()

    async def drain(self) -> None:
        """Wait for the outcome records of calls that ended (`InFlight.drain`): the worker is stopping."""
        await self._in_flight.drain()

    @activity.defn(name=DESCRIBE_TOOLS_ACTIVITY)
    async def describe_tools(self, request: DescribeToolsRequest) -> DescribeToolsResult:
        """The schemas of the agent's tools and its MCP servers' tools,
        recorded in history so replays see the same list."""
        agent = request.agent  # only its fields named in `TOOL_SOURCES` travel: read no other here
        missing = [name for name in agent.tools if name not in self.registry]
        if missing:
            raise ApplicationError(
                f"agent {agent.name!r} lists tool(s) {', '.join(missing)} that this worker does not register "
                f"(registered: {', '.join(self.registry.names()) or 'none'}). Start the worker with "
                f"`stalwart worker --tools your.module` where the module defines them with @tool, give the "
                f"worker's plugin the agent whose tools are @tool functions (`StalwartPlugin(agents=[agent])`, "
                f"`build_worker(client, agents=[agent])`) or the functions (`StalwartPlugin(tools=[...])`), "
                f"or remove them from the agent.",
                type=failure_types.UNKNOWN_TOOL,
                non_retryable=True,
            )
        tools = [self.registry.get(name).spec() for name in agent.tools]  # type: ignore[union-attr]
        try:
            tools += await self._mcp_tools(agent)
            return DescribeToolsResult(tools=bind(tools, agent.bindings))
        except (McpConfigError, BindingError) as err:
            raise ApplicationError(str(err), type=type(err).__name__, non_retryable=True) from err
        except McpUnavailable as err:
            final = isinstance(err, McpHandshakeTimeout) and activity.info().attempt >= err.MAX_ATTEMPTS
            raise ApplicationError(str(err), type=type(err).__name__, non_retryable=final) from err

    @activity.defn(name=RUN_TOOL_ACTIVITY)
    async def run_tool(self, request: ToolRequest) -> ToolResult:
        """Run one tool call; its latency and errors are counted in the worker's metrics.

        An attempt of a call this worker already finished (its completion never reached the server)
        returns that result instead of running the tool again, and one of a call it still runs waits for it.
        """
        info = activity.info()
        key = (info.workflow_run_id, info.activity_id)
        if info.attempt > 1 and key in self._finished:
            activity.logger.info(
                "tool call %s finished on this worker before, but its result did not reach the server; "
                "answering attempt %d with that result instead of running the tool again",
                request.call.name,
                info.attempt,
            )
            return self._finished[key]
        what = f"tool call {request.call.name}"
        if info.is_local:
            self._fast_failures.refuse_after(request.deadline, f"{what} ({request.call.id})", key, info.attempt)
        attempt = self._in_flight.run(key, lambda: self._run_kept(request, key, local=info.is_local), what=what)
        return await (self._fast_failures.noting(key, attempt) if info.is_local else attempt)

    async def _run_kept(self, request: ToolRequest, key: tuple[str | None, str], *, local: bool) -> ToolResult:
        """Run the call, and keep its result here for a later attempt of it.

        A `local` one (a fast tool, run inside the workflow's task) times no heartbeats: nothing reads a local
        activity's (it has no heartbeat timeout, and the server never sees it); its attempt's short timeout stands
        in for them."""
        with telemetry.tool_call(request.call.name, request.tool.kind) as observed:
            result = observed.result(await self._run_tool(request, heartbeats=not local))
        if request.chain_id is not None and self._transcripts is not None:
            result = await self._kept(request.chain_id, result)
        if len(result.text) <= FINISHED_RESULT_MAX_CHARS:
            self._finished[key] = result
        while len(self._finished) > FINISHED_RESULTS_KEPT:
            self._finished.popitem(last=False)
        return result

    async def _kept(self, chain_id: str, result: ToolResult) -> ToolResult:
        """A large result stored for the model call to read (`TranscriptStore.keep_result`), secrets redacted first.

        A small one (most) goes on as it is, without opening the store or copying it to redact it: the worker
        redacts every activity's result on its way out. The tool has run: if storage fails, the result goes on
        inline rather than the call being run again.
        """
        assert self._transcripts is not None
        if goes_inline(result):
            return result
        try:
            return await self._transcripts().keep_result(chain_id, redact_value(result))
        except Exception as err:
            activity.logger.warning(
                "could not store the result of tool call %s, so it travels inline: %s: %s",
                result.name,
                type(err).__name__,
                err,
            )
            return result

    async def _run_tool(self, request: ToolRequest, *, heartbeats: bool = True) -> ToolResult:
        call, spec = request.call, request.tool
        refuse_after(request.deadline, f"tool call {call.name} ({call.id})")
        named = self.registry.get(call.name)
        if named is not None and spec.server is not None and named.kind != spec.kind:
            # An MCP tool that kept its name because the agent does not use the worker's tool of that name:
            # the call is the server's.
            named = None
        by_kind = self.registry.kind_handler(spec.kind) or (self._call_mcp if spec.kind == "mcp" else None)
        if named is None and by_kind is None:
            return ToolResult.failure(
                call,
                f"No handler registered for tool: {call.name} (kind: {spec.kind})",
                "Call one of the tools you were given.",
            )
        unbound = sorted({name for name in spec.bindings.values() if name not in request.run_inputs})
        if unbound:
            return ToolResult.failure(
                call,
                f"tool {call.name} takes run input(s) {', '.join(unbound)}, which this run was not given",
                MISSING_INPUT_HINT,
            )
        arguments = {**call.arguments, **{param: request.run_inputs[name] for param, name in spec.bindings.items()}}
        context = ToolContext(idempotency_key=request.idempotency_key, call_id=call.id, run_inputs=request.run_inputs)
        try:
            invoked: Awaitable[Any]
            if named is not None:
                invoked = named.invoke(arguments, context)
            else:
                invoked = by_kind(spec, arguments, context)  # type: ignore[misc]
            beating = heartbeating(HEARTBEAT_EVERY_SECONDS, activity.heartbeat) if heartbeats else nullcontext()
            async with beating:
                value = await invoked
        except McpHandshakeTimeout as err:
            if activity.info().attempt >= err.MAX_ATTEMPTS:
                return ToolResult.failure(call, f"{type(err).__name__}: {_text(err)}", McpConfigError.hint)
            raise ApplicationError(f"{call.name}: {_text(err)}", type=failure_types.RETRYABLE_TOOL_ERROR) from err
        except RetryableToolError as err:
            raise ApplicationError(
                f"{call.name}: {_text(err)}",
                type=failure_types.RETRYABLE_TOOL_ERROR,
                next_retry_delay=None if err.retry_after is None else timedelta(seconds=err.retry_after),
            ) from err
        except ToolArgumentsError as err:
            return ToolResult.failure(call, f"ToolArgumentsError: {_text(err)}")
        except BaseException as err:
            if isinstance(err, GeneratorExit) or _being_cancelled(err):
                raise
            return _raised(call, err)
        try:
            return ToolResult.returned(call, value)
        except Exception as err:  # json.dumps: TypeError, ValueError (a cycle); pydantic: PydanticSerializationError
            return _unencodable(call, value, err)

    async def _mcp_tools(self, agent: AgentSpec) -> list[ToolSpec]:
        if not agent.mcp_servers:
            return []
        listed = await asyncio.gather(*(self.mcp.list_tools(server) for server in agent.mcp_servers))
        own = [*agent.tools, *(sub.name for sub in agent.sub_agents)]
        return catalog.tool_specs(list(zip(agent.mcp_servers, listed, strict=True)), own=own)

    async def _call_mcp(self, spec: ToolSpec, arguments: dict[str, Any], context: ToolContext) -> str:
        if spec.server is None:
            raise McpConfigError(f"tool {spec.name} is of kind mcp but names no server")
        name = spec.remote_name or spec.name
        try:
            result = await self.mcp.call_tool(spec.server, name, arguments)
        except McpServerExited:
            if spec.side_effecting:
                raise
            # A read-only tool has no effect to repeat: run it once more, on the restarted server.
            activity.logger.info(
                "MCP server %r exited during read-only %s; calling it once more", spec.server.name, name
            )
            result = await self.mcp.call_tool(spec.server, name, arguments)
        if result.is_error:
            raise McpToolError(render(result))
        return render(result)


STOPPING_HINT = (
    "The tool stopped on this call, perhaps on arguments it could not use: check them and try once more, or answer "
    "without it."
)


_STOPPERS: dict[type[BaseException], str] = {
    SystemExit: "tried to exit the worker process (argparse does on arguments it cannot parse)",
    KeyboardInterrupt: "raised KeyboardInterrupt, which stops the worker process",
    asyncio.CancelledError: "raised CancelledError though nothing cancelled its call (something it awaited was)",
}
"""What a tool did that raising one of these says. None is an `Exception`: the first two ended the worker's event
loop, and the last failed the attempt as if cancelled, so that Temporal ran the tool again."""


def _being_cancelled(err: BaseException) -> bool:
    """Whether `err` is this call's own cancellation: Temporal cancelled the activity (the run was cancelled, the
    worker is stopping), and `InFlight` cancelled the task running the call. A `CancelledError` a tool raises while
    nothing cancels its call (something it awaited was cancelled) is the tool's failure instead."""
    task = asyncio.current_task()
    return isinstance(err, asyncio.CancelledError) and task is not None and task.cancelling() > 0


def _raised(call: ToolCall, err: BaseException) -> ToolResult:
    """What the model reads of a tool that raised `err`: its type and message, with its `hint` if it has one.

    Whatever it raised, the call ends here, once: `SystemExit` (argparse on arguments it cannot parse),
    `KeyboardInterrupt` or a stray `CancelledError` would otherwise end the worker's event loop, or fail the attempt
    so that Temporal ran the tool again (on the next worker, which it ended too); and an exception whose message
    cannot be read is not allowed to fail the call while it is being described."""
    kind, text = type(err).__name__, _text(err)
    if not isinstance(err, Exception):
        said = f"{kind}({text})" if text else kind
        what = next((told for cls, told in _STOPPERS.items() if isinstance(err, cls)), f"raised {kind}")
        activity.logger.warning(
            "tool %s %s: a tool must raise an exception instead; the call ends as an error the model reads, and is "
            "not run again",
            call.name,
            what,
            exc_info=err,
        )
        return ToolResult.failure(
            call,
            f"{said}: tool {call.name} {what}, where a tool must raise an exception; the call ended here and was not "
            "run again",
            STOPPING_HINT,
        )
    activity.logger.info("tool %s failed: %s: %s", call.name, kind, text)
    return ToolResult.failure(call, f"{kind}: {text}", _hint(err))


def _text(err: BaseException) -> str:
    """`str(err)`, or a note saying it could not be made: a tool's exception whose `__str__` raises is still told
    to the model, not raised from the handler describing it (which failed the attempt, and the tool ran again)."""
    try:
        return str(err)
    except BaseException as failed:
        return f"<its message could not be read: str() raised {type(failed).__name__}>"


def _hint(err: BaseException) -> str:
    """The exception's own `hint` (an MCP error's says what to do), if it is text; else the default one."""
    try:
        hint = getattr(err, "hint", None)
    except Exception:
        hint = None
    return hint if isinstance(hint, str) and hint else TOOL_ERROR_HINT


UNENCODABLE_HINT = (
    "The tool is at fault, not your arguments: it fails the same way however it is called. Do not call it again; "
    "answer without it or use another tool."
)


def _unencodable(call: ToolCall, value: Any, err: Exception) -> ToolResult:
    """The answer to a tool that returned what JSON cannot encode: the tool ran, and running it again returns the
    same value, so it is not retried, and the model is not told to fix arguments that were fine."""
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    why = (
        f"tool {call.name} returned a value of type {kind} that is not JSON-serialisable ({type(err).__name__}: "
        f"{err}); its author should make it return a str, a dict or list of JSON values, or a pydantic model"
    )
    activity.logger.warning("%s", why)
    return ToolResult.failure(call, why, UNENCODABLE_HINT)


def bind(tools: Sequence[ToolSpec], bindings: Mapping[str, Mapping[str, str]]) -> list[ToolSpec]:
    """Hide bound parameters from the model and record where their values come from (Prompty bindings)."""
    by_name = {tool.name: tool for tool in tools}
    unknown = sorted(name for name in bindings if name not in by_name)
    if unknown:
        raise BindingError(
            f"[bindings] names tool(s) {', '.join(unknown)} that the agent does not have "
            f"(its tools: {', '.join(by_name) or 'none'}); fix the [bindings] table of the agent file"
        )
    return [_bind(tool, bindings[tool.name]) if bindings.get(tool.name) else tool for tool in tools]


def _bind(tool: ToolSpec, binding: Mapping[str, str]) -> ToolSpec:
    properties = dict(tool.parameters.get("properties", {}))
    unknown = sorted(param for param in binding if param not in properties)
    if unknown:
        raise BindingError(
            f"[bindings.{tool.name}] binds parameter(s) {', '.join(unknown)} that tool {tool.name} does not take "
            f"(its parameters: {', '.join(properties) or 'none'}); fix the agent file"
        )
    for param in binding:
        del properties[param]
    parameters = {**tool.parameters, "properties": properties}
    if "required" in parameters:
        parameters["required"] = [name for name in parameters["required"] if name not in binding]
    return tool.model_copy(update={"parameters": parameters, "bindings": dict(binding)})
