"""Tool calls: the tools the model is offered, and running the calls it chose.

A step's calls run at most `max_parallel_tools` at once, and their results go back to the model in call order. A
call runs as an activity (a local one for a fast tool), or as a sub-agent (`delegation.py`); one that needs a
person's decision waits at the approval gate first. The thrash guard answers a repeated call of a tool without
side effects with its earlier result instead of running it again.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.activities import DescribeToolsRequest, DescribeToolsResult, ToolRequest
    from stalwart.contracts.agent import unknown_tool_names
    from stalwart.contracts.messages import Message, ToolCall, ToolResult, Usage
    from stalwart.contracts.run import StepRecord
    from stalwart.contracts.run_input import RunInput
    from stalwart.contracts.tools import ToolSpec
    from stalwart.workflows import conversation, deadlines, delegation, patches, policies, telemetry
    from stalwart.workflows.approvals import ApprovalGate
    from stalwart.workflows.budget import Budget
    from stalwart.workflows.chain import Chain
    from stalwart.workflows.failures import tool_failure
    from stalwart.workflows.turns import Turn


_ARGUMENTS_KEY = json.JSONEncoder(sort_keys=True)
"""The thrash guard's key of a call's arguments: `json.dumps(arguments, sort_keys=True)`, one encoder for every call."""


class ToolCalls:
    """Describes the agent's tools once per chain, and runs each step's calls for the turn given."""

    def __init__(self, input: RunInput, chain: Chain, approvals: ApprovalGate) -> None:
        self._input = input
        self._agent = input.agent
        self._chain = chain
        self._approvals = approvals

    @property
    def _tools(self) -> list[ToolSpec]:
        return self._chain.state.tools or []

    async def describe(self) -> list[ToolSpec]:
        """The tools the model is offered; `enable_tools` / `enable_delegation` leave out a kind."""
        agent = self._agent
        loop = agent.loop
        agent_tools = await delegation.describe(agent) if loop.enable_delegation else []
        if not loop.enable_tools or (not agent.tools and not agent.mcp_servers):
            return agent_tools
        servers = [*agent.tools, *(s.name for s in agent.mcp_servers)]
        result = await workflow.execute_activity(
            names.DESCRIBE_TOOLS_ACTIVITY,
            DescribeToolsRequest(agent=agent),
            result_type=DescribeToolsResult,
            # Room for the slowest server's handshake deadline, so that deadline, which names the server, fires first.
            start_to_close_timeout=max(
                policies.DESCRIBE_TIMEOUT,
                timedelta(seconds=max((s.handshake_seconds for s in agent.mcp_servers), default=0) + 30),
            ),
            retry_policy=policies.DESCRIBE_RETRY,
            summary=f"describe tools · {', '.join(servers)}"[:200],
        )
        return [*result.tools, *agent_tools]

    def unknown_names(self) -> str | None:
        """Names in `require_approval` or `[bindings]` that no tool offered to this run has, before any tool runs."""
        if self._agent.mcp_servers and not self._agent.loop.enable_tools:
            return None  # the MCP servers' tools were not listed: nothing to judge their names by
        return unknown_tool_names(self._agent, [tool.name for tool in self._tools])

    def named(self, name: str) -> ToolSpec | None:
        return next((t for t in self._tools if t.name == name), None)

    async def run(self, calls: list[ToolCall], turn: Turn) -> None:
        """Run one step's tool calls, at most `max_parallel_tools` at once; results keep call order."""
        step = self._chain.state.step
        limit = asyncio.Semaphore(self._agent.budgets.max_parallel_tools)
        records = [
            StepRecord(
                step=step,
                role="tool",
                tool_call_id=call.id,
                tool_name=call.name,
                tool_kind=tool.kind if (tool := self.named(call.name)) else None,
                arguments=call.arguments,
                started_at=workflow.now(),
            )
            for call in calls
        ]
        self._chain.steps.extend(records)
        results = await asyncio.gather(
            *(self._run_one(call, record, limit, turn) for call, record in zip(calls, records, strict=True))
        )
        # A large result is in storage (the tool activity put it there): the model call reads it from there, so
        # history holds it once, in the tool's completion.
        self._chain.state.unsent.append(
            Message(role="tool", tool_results=[result.by_reference() for result in results])
        )

    async def _run_one(self, call: ToolCall, record: StepRecord, limit: asyncio.Semaphore, turn: Turn) -> ToolResult:
        async with limit:
            record.started_at = workflow.now()
            result = await self._traced(call, turn)
            record.ended_at = workflow.now()
        if result.is_error:
            record.error = result.text
        else:
            record.result, record.result_stored = result.text, result.stored
        return result

    async def _traced(self, call: ToolCall, turn: Turn) -> ToolResult:
        """A tool call inside its `execute_tool` span; a sub-agent's run or an A2A delegation nests under it."""
        tool = self.named(call.name)
        step = self._chain.state.step
        attributes = telemetry.tool_attributes(call.name, call.id, tool.kind if tool else "unknown", step)
        with telemetry.span(
            f"execute_tool {call.name}",
            attributes,
            ends_on=(deadlines.DeadlineReached, delegation.DelegationCancelled),
        ) as span:
            result = await self._execute(call, turn)
            if result.is_error:
                span.error("tool_error", result.text)
            return result

    async def _execute(self, call: ToolCall, turn: Turn) -> ToolResult:
        if call.arguments_error is not None:
            return ToolResult.failure(call, f"Malformed arguments: {call.arguments_error}")
        tool = self.named(call.name)
        if tool is None:
            available = ", ".join(t.name for t in self._tools) or "none"
            return ToolResult.failure(
                call, f"Unknown tool: {call.name}", f"Call one of the available tools: {available}."
            )
        earlier = self._chain.state.earlier_results
        guarded = self._agent.thrash_guard and not tool.side_effecting
        repeat_key = f"{call.name} {_ARGUMENTS_KEY.encode(call.arguments)}"
        if guarded and repeat_key in earlier:
            step, content = earlier[repeat_key]
            return ToolResult(
                call_id=call.id, name=call.name, content=conversation.ALREADY_CALLED.format(step=step, result=content)
            )
        if tool.requires_approval or tool.name in self._agent.require_approval:
            refusal = await self._approvals.wait(call, self._chain.state.step)
            if refusal is not None:
                return ToolResult.failure(call, refusal, conversation.REJECTED_HINT)
        result = await self._dispatch(call, tool, turn)
        if guarded and not result.is_error:
            self._chain.state.earlier_results[repeat_key] = (self._chain.state.step, result.text)
        return result

    async def _dispatch(self, call: ToolCall, tool: ToolSpec, turn: Turn) -> ToolResult:
        if tool.kind == "agent":
            return await self._delegate(call, tool, turn.budget)
        deadline = turn.budget.deadline
        chain_id, step = self._chain.state.chain_id, self._chain.state.step
        request = ToolRequest(
            call=call,
            tool=tool.for_running(),
            idempotency_key=conversation.call_key(workflow.info().workflow_id, chain_id, step, call.id),
            run_inputs=self._input.inputs,
            deadline=deadline,
            chain_id=chain_id,
        )
        try:
            if tool.fast and patches.active(patches.FAST_TOOLS_RUN_AS_LOCAL_ACTIVITIES):
                return await self._run_fast(request, tool)
            return await deadlines.execute_activity(
                names.RUN_TOOL_ACTIVITY,
                request,
                result_type=ToolResult,
                deadline=deadline,
                start_to_close=timedelta(seconds=tool.timeout_seconds),
                heartbeat_timeout=timedelta(seconds=tool.heartbeat_timeout_seconds),
                retry_policy=policies.TOOL_RETRY,
                summary=f"tool {call.name}",
            )
        except ActivityError as err:
            return tool_failure(call, tool, err)

    @staticmethod
    async def _run_fast(request: ToolRequest, tool: ToolSpec) -> ToolResult:
        """A fast tool as a local activity: the same activity run by this worker inside the workflow's task, its
        result recorded as one marker instead of a scheduled activity's events and a round trip through the server.
        Short timeouts only, capped at the run's deadline, and no heartbeats: it holds up the workflow's task."""
        return await deadlines.execute_activity(
            names.RUN_TOOL_ACTIVITY,
            request,
            result_type=ToolResult,
            deadline=request.deadline,
            start_to_close=min(timedelta(seconds=tool.timeout_seconds), policies.FAST_TOOL_TIMEOUT),
            schedule_to_close=policies.FAST_TOOL_SCHEDULE_TO_CLOSE,
            local=True,
            needed_for=f"the fast tool `{request.call.name}`",
            retry_policy=policies.TOOL_RETRY,
            summary=f"tool {request.call.name}",
        )

    async def _delegate(self, call: ToolCall, tool: ToolSpec, budget: Budget) -> ToolResult:
        """Run a sub-agent; what it may spend is held back from siblings of the same step until it ends."""
        context = self._delegation_context(budget)
        held = delegation.reservation(tool, context)
        budget.held = budget.held + held
        try:
            delegated = await delegation.delegate(call, tool, context)
        except delegation.DelegationCancelled as cancelled:
            self._charge(cancelled.usage, budget)
            raise
        finally:
            budget.held = budget.held - held
        self._charge(delegated.usage, budget)
        return delegated.result

    def _charge(self, usage: Usage, budget: Budget) -> None:
        budget.charge(usage)
        self._chain.state.usage = self._chain.state.usage + usage

    def _delegation_context(self, budget: Budget) -> delegation.DelegationContext:
        """What a sub-agent may still spend: this turn's budget less what it used and what running siblings hold."""
        return delegation.DelegationContext(
            parent_id=workflow.info().workflow_id,
            step=self._chain.state.step,
            chain_id=self._chain.state.chain_id,
            inputs=self._input.inputs,
            remaining_tokens=budget.remaining_tokens(),
            remaining_seconds=budget.remaining_seconds(workflow.now()),
            remaining_cost_usd=budget.remaining_cost_usd(),
            deadline=budget.deadline,
        )
