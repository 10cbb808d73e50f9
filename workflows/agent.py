"""The agent loop as a Temporal workflow.

Each turn checks the budgets, asks the model for the next action (an
activity), runs the tools it chose (activities, at most `max_parallel_tools`
at once, results fed back in call order), and stops on a turn without tool
calls. A durable timer races the whole loop for the wall-clock budget.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.activities import (
        DescribeToolsRequest,
        DescribeToolsResult,
        ModelContext,
        ModelRequest,
        ToolRequest,
    )
    from stalwart.contracts.approvals import ApprovalDecision, PendingApproval
    from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, ToolResult, Usage
    from stalwart.contracts.run import AgentResult, RunEvent, RunInput, RunState, RunStatus, StepRecord, StopReason
    from stalwart.contracts.tools import ToolSpec
    from stalwart.workflows import conversation, delegation, policies
    from stalwart.workflows.failures import innermost_message, message_unless_cancelled


class _ModelFailed(Exception):
    """The model activity failed for good; the run ends with stop reason `error`."""


@workflow.defn(name=names.WORKFLOW_TYPE)
class AgentWorkflow:
    """One run of one agent towards one goal."""

    @workflow.init
    def __init__(self, input: RunInput) -> None:
        self._input = input
        self._agent = input.agent
        now = workflow.now()
        self._messages: list[Message] = [Message(role="user", content=input.goal)]
        self._steps: list[StepRecord] = [
            StepRecord(step=0, role="user", content=input.goal, started_at=now, ended_at=now)
        ]
        self._tools: list[ToolSpec] = []
        self._usage = Usage()
        self._step = 0
        self._status: RunStatus = "running"
        self._answer: str | None = None
        self._error: str | None = None
        self._pending: dict[str, PendingApproval] = {}
        self._decisions: dict[str, tuple[bool, ApprovalDecision]] = {}
        self._earlier_results: dict[str, tuple[int, str]] = {}
        self._published: dict[str, object] = {}
        self._reserved = Usage()  # budget held by sub-agents still running

    @workflow.run
    async def run(self, input: RunInput) -> AgentResult:
        self._started = workflow.now()
        self._publish()
        try:
            stop = await self._run_within_deadline()
        except asyncio.CancelledError:
            self._close_open_steps("cancelled")
            stop = "cancelled"
        return self._finish(stop)

    # -- queries -------------------------------------------------------------

    @workflow.query
    def state(self) -> RunState:
        """The live step log, status and usage of the run."""
        return RunState(
            agent=self._agent.name,
            goal=self._input.goal,
            status=self._status,
            steps=self._steps,
            usage=self._usage,
            answer=self._answer,
            error=self._error,
        )

    @workflow.query
    def pending_approvals(self) -> list[PendingApproval]:
        """Tool calls waiting for a person's decision, with their arguments."""
        return list(self._pending.values())

    @workflow.update
    def approve(self, decision: ApprovalDecision) -> str:
        """Let a waiting tool call run."""
        self._decisions[decision.call_id] = (True, decision)
        return f"approved {decision.call_id}"

    @approve.validator
    def _validate_approve(self, decision: ApprovalDecision) -> None:
        self._require_pending(decision.call_id)

    @workflow.update
    def reject(self, decision: ApprovalDecision) -> str:
        """Refuse a waiting tool call; the model reads the refusal as the call's result."""
        self._decisions[decision.call_id] = (False, decision)
        return f"rejected {decision.call_id}"

    @reject.validator
    def _validate_reject(self, decision: ApprovalDecision) -> None:
        self._require_pending(decision.call_id)

    def _require_pending(self, call_id: str) -> None:
        if call_id not in self._pending or call_id in self._decisions:
            waiting = ", ".join(self._pending) or "none"
            raise ApplicationError(f"no tool call {call_id!r} is waiting for approval in this run (waiting: {waiting})")

    @workflow.query
    def events(self) -> list[RunEvent]:
        """The run so far in the KAOS memory-event vocabulary."""
        return conversation.events(self._steps)

    @workflow.query
    def model_context(self, request: ModelRequest) -> ModelContext:
        """What the model activity sends to the provider; read by that activity instead of carried in its input."""
        return ModelContext(
            agent=self._agent,
            step=request.step,
            tools=self._tools,
            messages=conversation.prune(self._messages[: request.message_count], self._agent.history_limit),
            tools_enabled=request.tools_enabled,
        )

    # -- the loop ------------------------------------------------------------

    async def _run_within_deadline(self) -> StopReason:
        """Run the loop, racing it against a durable timer when the agent has a wall-clock budget."""
        max_seconds = self._agent.budgets.max_seconds
        loop = asyncio.ensure_future(self._loop())
        if max_seconds is None:
            try:
                return await loop
            except asyncio.CancelledError:
                loop.cancel()
                raise
        deadline = asyncio.ensure_future(
            workflow.sleep(timedelta(seconds=max_seconds), summary=f"budget max_seconds={max_seconds:g}")
        )
        try:
            await workflow.wait([loop, deadline], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            loop.cancel()
            deadline.cancel()
            raise
        if loop.done():
            deadline.cancel()
            return loop.result()
        loop.cancel()
        try:
            await loop
        except asyncio.CancelledError:
            pass
        self._close_open_steps(f"cancelled: wall-clock budget of {max_seconds:g}s reached")
        return "max_seconds"

    async def _loop(self) -> StopReason:
        try:
            self._tools = await self._describe_tools()
        except ActivityError as err:
            self._error = innermost_message(err)
            return "error"
        budgets = self._agent.budgets
        try:
            while True:
                if self._step >= budgets.max_steps:
                    return await self._stop_on_budget("max_steps")
                if budgets.max_tokens is not None and self._usage.total_tokens >= budgets.max_tokens:
                    return await self._stop_on_budget("max_tokens")
                if budgets.max_cost_usd is not None and self._usage.cost_usd >= budgets.max_cost_usd:
                    return await self._stop_on_budget("max_cost")
                turn = await self._model_turn(tools_enabled=bool(self._tools))
                if turn.feedback is not None:
                    self._messages.append(Message(role="user", content=turn.feedback))
                    continue
                if turn.wants_final_answer:
                    self._messages.append(Message(role="user", content=conversation.FINAL_RESPONSE_PROMPT))
                    turn = await self._model_turn(tools_enabled=False)
                if not turn.tool_calls:
                    self._answer = turn.text
                    self._steps[-1].final = True
                    return "done"
                await self._run_tools(turn.tool_calls)
        except _ModelFailed:
            return "error"

    async def _stop_on_budget(self, reason: StopReason) -> StopReason:
        if self._agent.budgets.finalize_on_budget and reason in ("max_steps", "max_tokens", "max_cost"):
            budget = reason.removeprefix("max_")
            self._messages.append(Message(role="user", content=conversation.FINALIZE_PROMPT.format(budget=budget)))
            turn = await self._model_turn(tools_enabled=False)
            self._answer = turn.text
            self._steps[-1].final = True
        elif reason == "max_steps":
            self._answer = conversation.MAX_STEPS_ANSWER.format(n=self._agent.budgets.max_steps)
        return reason

    # -- activities ----------------------------------------------------------

    async def _describe_tools(self) -> list[ToolSpec]:
        agent_tools = await delegation.describe(self._agent)
        if not self._agent.tools and not self._agent.mcp_servers:
            return agent_tools
        result = await workflow.execute_activity(
            names.DESCRIBE_TOOLS_ACTIVITY,
            DescribeToolsRequest(agent=self._agent),
            result_type=DescribeToolsResult,
            start_to_close_timeout=policies.DESCRIBE_TIMEOUT,
            retry_policy=policies.DESCRIBE_RETRY,
            summary=f"describe tools · {', '.join([*self._agent.tools, *(s.name for s in self._agent.mcp_servers)])}"[
                :200
            ],
        )
        return [*result.tools, *agent_tools]

    async def _model_turn(self, *, tools_enabled: bool) -> AssistantTurn:
        self._step += 1
        record = StepRecord(step=self._step, role="assistant", started_at=workflow.now())
        self._steps.append(record)
        try:
            turn = await workflow.execute_activity(
                names.MODEL_ACTIVITY,
                ModelRequest(
                    step=self._step,
                    message_count=len(self._messages),
                    tools_enabled=tools_enabled,
                ),
                result_type=AssistantTurn,
                start_to_close_timeout=policies.MODEL_START_TO_CLOSE,
                schedule_to_close_timeout=policies.MODEL_SCHEDULE_TO_CLOSE,
                heartbeat_timeout=policies.MODEL_HEARTBEAT,
                retry_policy=policies.MODEL_RETRY,
                summary=f"model {self._agent.model} · step {self._step}",
            )
        except ActivityError as err:
            record.error = message_unless_cancelled(err)
            record.ended_at = workflow.now()
            self._error = f"model call at step {self._step} failed: {record.error}"
            raise _ModelFailed() from err
        record.content = turn.text
        record.usage = turn.usage
        record.ended_at = workflow.now()
        self._usage = self._usage + turn.usage
        self._messages.append(
            Message(role="assistant", content=turn.text, tool_calls=turn.tool_calls, provider_raw=turn.provider_raw)
        )
        self._publish()
        return turn

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        """Run one turn's tool calls, at most `max_parallel_tools` at once; results keep call order."""
        limit = asyncio.Semaphore(self._agent.budgets.max_parallel_tools)
        records = [
            StepRecord(
                step=self._step,
                role="tool",
                tool_call_id=call.id,
                tool_name=call.name,
                tool_kind=tool.kind if (tool := self._tool_named(call.name)) else None,
                arguments=call.arguments,
                started_at=workflow.now(),
            )
            for call in calls
        ]
        self._steps.extend(records)
        results = await asyncio.gather(
            *(self._run_tool(call, record, limit) for call, record in zip(calls, records, strict=True))
        )
        self._messages.append(Message(role="tool", tool_results=list(results)))

    async def _run_tool(self, call: ToolCall, record: StepRecord, limit: asyncio.Semaphore) -> ToolResult:
        async with limit:
            record.started_at = workflow.now()
            result = await self._execute_tool(call)
            record.ended_at = workflow.now()
        if result.is_error:
            record.error = result.content
        else:
            record.result = result.content
        return result

    async def _execute_tool(self, call: ToolCall) -> ToolResult:
        if call.arguments_error is not None:
            return ToolResult.failure(call, f"Malformed arguments: {call.arguments_error}")
        tool = self._tool_named(call.name)
        if tool is None:
            available = ", ".join(t.name for t in self._tools) or "none"
            return ToolResult.failure(
                call, f"Unknown tool: {call.name}", f"Call one of the available tools: {available}."
            )
        guarded = self._agent.thrash_guard and not tool.side_effecting
        repeat_key = f"{call.name} {json.dumps(call.arguments, sort_keys=True)}"
        if guarded and repeat_key in self._earlier_results:
            step, content = self._earlier_results[repeat_key]
            return ToolResult(
                call_id=call.id, name=call.name, content=conversation.ALREADY_CALLED.format(step=step, result=content)
            )
        if tool.requires_approval or tool.name in self._agent.require_approval:
            refusal = await self._wait_for_approval(call)
            if refusal is not None:
                return ToolResult.failure(call, refusal, conversation.REJECTED_HINT)
        result = await self._dispatch(call, tool)
        if guarded and not result.is_error:
            self._earlier_results[repeat_key] = (self._step, result.content)
        return result

    async def _dispatch(self, call: ToolCall, tool: ToolSpec) -> ToolResult:
        if tool.kind == "agent":
            return await self._delegate(call, tool)
        try:
            return await workflow.execute_activity(
                names.RUN_TOOL_ACTIVITY,
                ToolRequest(
                    call=call,
                    tool=tool,
                    idempotency_key=conversation.call_key(workflow.info().workflow_id, self._step, call.id),
                    run_inputs=self._input.inputs,
                ),
                result_type=ToolResult,
                start_to_close_timeout=timedelta(seconds=tool.timeout_seconds),
                heartbeat_timeout=timedelta(seconds=tool.heartbeat_timeout_seconds),
                retry_policy=policies.TOOL_RETRY,
                summary=f"tool {call.name}",
            )
        except ActivityError as err:
            return ToolResult.failure(call, message_unless_cancelled(err))

    async def _wait_for_approval(self, call: ToolCall) -> str | None:
        """Hold the call until a person approves or rejects it,
        or the approval timeout rejects it; None means approved."""
        if call.id in self._pending:  # a person approves a call by its id, so two waiting at once must differ
            return (
                f"Not run: another call with id {call.id!r} is already waiting for approval; "
                "give each tool call its own id"
            )
        timeout = self._agent.approval_timeout_seconds
        now = workflow.now()
        self._pending[call.id] = PendingApproval(
            call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            step=self._step,
            requested_at=now,
            expires_at=now + timedelta(seconds=timeout),
        )
        self._status = "awaiting_approval"
        self._publish()
        try:
            await workflow.wait_condition(
                lambda: call.id in self._decisions,
                timeout=timedelta(seconds=timeout),
                timeout_summary=f"approval of {call.name} · {call.id}",
            )
            approved, decision = self._decisions.pop(call.id)  # consumed: a later call reusing the id waits anew
            refusal = (
                None
                if approved
                else f"Rejected by {decision.reviewer or 'a reviewer'}: {decision.reason or 'no reason given'}"
            )
        except TimeoutError:
            refusal = f"Rejected: nobody approved this call within {timeout:g} seconds"
        finally:
            del self._pending[call.id]
            if not self._pending:
                self._status = "running"
            self._publish()
        return refusal

    def _tool_named(self, name: str) -> ToolSpec | None:
        return next((t for t in self._tools if t.name == name), None)

    async def _delegate(self, call: ToolCall, tool: ToolSpec) -> ToolResult:
        """Run a sub-agent; what it may spend is held back from siblings of the same turn until it ends."""
        context = self._delegation_context()
        held = delegation.reservation(tool, context)
        self._reserved = self._reserved + held
        try:
            delegated = await delegation.delegate(call, tool, context)
        except delegation.DelegationCancelled as cancelled:
            self._usage = self._usage + cancelled.usage
            raise
        finally:
            self._reserved = self._reserved - held
        self._usage = self._usage + delegated.usage
        return delegated.result

    def _delegation_context(self) -> delegation.DelegationContext:
        """What a sub-agent may still spend: this run's budgets less what it used and what running siblings hold."""
        budgets = self._agent.budgets
        elapsed = (workflow.now() - self._started).total_seconds()
        committed = self._usage + self._reserved
        return delegation.DelegationContext(
            parent_id=workflow.info().workflow_id,
            step=self._step,
            inputs=self._input.inputs,
            remaining_tokens=None
            if budgets.max_tokens is None
            else max(budgets.max_tokens - committed.total_tokens, 0),
            remaining_seconds=None if budgets.max_seconds is None else max(budgets.max_seconds - elapsed, 0.0),
            remaining_cost_usd=None
            if budgets.max_cost_usd is None
            else max(budgets.max_cost_usd - committed.cost_usd, 0.0),
        )

    # -- bookkeeping ---------------------------------------------------------

    def _close_open_steps(self, why: str) -> None:
        now = workflow.now()
        for record in self._steps:
            if record.ended_at is None:
                record.ended_at = now
                record.error = why

    def _publish(self) -> None:
        """Keep the search attributes and the UI's current details in step with the run."""
        current: dict[SearchAttributeKey[Any], Any] = {
            names.AGENT_NAME: self._agent.name,
            names.AGENT_STATUS: self._status,
            names.AGENT_STEPS: self._step,
            names.AGENT_TOKENS: self._usage.total_tokens,
            names.AGENT_COST_USD: self._usage.cost_usd,
            names.AGENT_AWAITING_APPROVAL: bool(self._pending),
        }
        changed = [key.value_set(value) for key, value in current.items() if self._published.get(key.name) != value]
        if changed:  # each upsert is a history event: send only what changed
            workflow.upsert_search_attributes(changed)
            self._published.update({key.name: value for key, value in current.items()})
        last = self._steps[-1]
        workflow.set_current_details(
            f"**{self._agent.name}** · {self._status} · step {self._step}/{self._agent.budgets.max_steps} · "
            f"{self._usage.total_tokens} tokens\n\nlast: {last.role} {last.tool_name or ''}"
        )

    def _finish(self, stop: StopReason) -> AgentResult:
        self._status = stop
        if self._answer is None:
            self._answer = ""
        self._publish()
        return AgentResult(
            answer=self._answer,
            stop_reason=stop,
            steps=self._steps,
            usage=self._usage,
            elapsed_seconds=(workflow.now() - self._started).total_seconds(),
            error=self._error,
        )
