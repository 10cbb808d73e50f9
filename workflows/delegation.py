"""Delegation: another agent as a tool of this one.

A local sub-agent runs as a child workflow, so it has its own run, history and
UI page, and is cancelled with its parent; a remote one is asked over A2A by
an activity. Either way its outcome comes back to the model as a tool result:
a failure is feedback (`Delegation failed: ...`), never the end of the parent.
A local sub-agent spends from its parent's budgets: its token and cost limits
are capped at what the parent has left (less what siblings delegated in the
same step hold), and what it used is added to the parent's usage, even when
the parent is cancelled meanwhile. Its time is the parent's: the parent's
wall-clock budget cancels it, and the parent's deadline goes down in its input
(`RunInput.deadline`), so none of its calls starts after that deadline even
when no worker ran the parent at that moment; a remote agent's task is asked
with the same deadline. A remote agent's spending is its own and unknown here.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.a2a import A2ADelegateRequest, A2ADescribeRequest
    from stalwart.contracts.agent import AgentSpec, Budgets, SubAgent
    from stalwart.contracts.messages import ToolCall, ToolResult, Usage
    from stalwart.contracts.run import AgentResult
    from stalwart.contracts.run_input import RunInput
    from stalwart.contracts.tools import ToolSpec
    from stalwart.workflows import a2a_policy as policy
    from stalwart.workflows import conversation, deadlines
    from stalwart.workflows.failures import innermost_message, message_unless_cancelled

TASK_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": (
                "What the agent should do, with everything it needs to know: it does not see this conversation."
            ),
        }
    },
    "required": ["task"],
}
FAILED = "Delegation failed: {why}"
RETRY_HINT = "Try a narrower task, or answer with what you have."
WITHOUT_ANSWER = {
    "cancelled": "its run was cancelled",
    "max_seconds": "its time ran out",
    "max_tokens": "its token budget ran out",
    "max_cost": "its cost budget ran out",
}


@dataclass(frozen=True)
class DelegationContext:
    """Who delegates, and what the sub-agent may still spend of the parent's budgets."""

    parent_id: str
    step: int
    chain_id: str = ""
    """The first run id of the parent's continue-as-new chain: it makes idempotency keys unique per chain."""
    inputs: dict[str, Any] = field(default_factory=dict)
    remaining_tokens: int | None = None
    remaining_seconds: float | None = None
    remaining_cost_usd: float | None = None
    deadline: datetime | None = None
    """The parent's turn deadline (itself the earliest up its chain of parents): no call of the sub-agent may
    start after it."""

    def key(self, call: ToolCall) -> str:
        return conversation.call_key(self.parent_id, self.chain_id, self.step, call.id)


@dataclass(frozen=True)
class Delegated:
    result: ToolResult
    usage: Usage


class DelegationCancelled(asyncio.CancelledError):
    """The parent is being cancelled; carries what the sub-agent spent until then, so the parent can count it."""

    def __init__(self, usage: Usage) -> None:
        super().__init__()
        self.usage = usage


def reservation(tool: ToolSpec, context: DelegationContext) -> Usage:
    """What a local sub-agent may spend at most: held back from siblings delegated in the same step."""
    sub = tool.sub_agent
    if sub is None or sub.spec is None or sub.url is not None:
        return Usage()
    budgets = _drawn(sub.spec.budgets, context)
    return Usage(input_tokens=budgets.max_tokens or 0, cost_usd=budgets.max_cost_usd or 0.0)


def tool_specs(agent: AgentSpec) -> list[ToolSpec]:
    """One tool (kind `agent`) per agent this agent may delegate to."""
    return [
        ToolSpec(
            name=sub.name,
            description=sub.description or _own_description(sub),
            parameters=TASK_PARAMETERS,
            kind="agent",
            # A sub-agent with tools may change things; asking it twice is not a repeat to short-cut.
            side_effecting=sub.url is not None or sub.spec is None or _may_act(sub),
            sub_agent=sub,
        )
        for sub in agent.sub_agents
    ]


async def describe(agent: AgentSpec) -> list[ToolSpec]:
    """`tool_specs`, with each remote agent that has no description described by its A2A card.

    The card is fetched by an activity, so it is recorded once and a replay
    sees the same description. An unreadable card is not fatal: the agent is
    still offered, and a delegation to it will say what is wrong.
    """
    specs = tool_specs(agent)
    return list(await asyncio.gather(*(_with_card(spec) for spec in specs)))


async def delegate(call: ToolCall, tool: ToolSpec, context: DelegationContext) -> Delegated:
    """Run the sub-agent of `tool` on the call's task; its answer (or why it failed) is the call's result."""
    sub = tool.sub_agent
    if sub is None:
        return _failed(
            call, f"tool {tool.name} is of kind `agent` but names no sub-agent; declare it under [[sub_agents]]"
        )
    task = call.arguments.get("task")
    if not isinstance(task, str) or not task.strip():
        return _failed(call, f'call {tool.name} with a "task": a string saying what the agent should do')
    spent = _spent_budget(context)
    if spent is not None:
        return _failed(call, f"this run has no {spent} budget left for sub-agent {sub.name}; answer with what you have")
    if sub.url is not None:
        return await _remote(call, sub, sub.url, task, context)
    return await _child(call, sub, task, context)


# -- local sub-agents: child workflows ------------------------------------------


async def _child(call: ToolCall, sub: SubAgent, task: str, context: DelegationContext) -> Delegated:
    if sub.spec is None:
        return _failed(
            call,
            f"sub-agent {sub.name} names the agent file {sub.file!r}, which was not read into this run; "
            "start the run from its agent file (client.load_agent embeds sub-agent files)",
        )
    spec = _as_single_call(sub.spec) if sub.mode == "single" else sub.spec
    spec = spec.model_copy(update={"budgets": _drawn(spec.budgets, context)})
    try:
        result = await workflow.execute_child_workflow(
            names.WORKFLOW_TYPE,
            RunInput(agent=spec, goal=task, inputs=context.inputs, deadline=context.deadline),
            result_type=AgentResult,
            id=f"{context.parent_id}/{sub.name}/{context.step}-{call.id}",
            task_queue=workflow.info().task_queue,
            parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"{sub.name} ({sub.mode}) for {context.parent_id}: {task}"[:400],
            static_details=(
                f"**Sub-agent** `{sub.name}` of `{context.parent_id}` · mode `{sub.mode}` · model `{spec.model}`"
                f"\n\n**Task**\n\n{task}"
            ),
        )
    except ChildWorkflowError as err:
        if _parent_cancelled():
            raise asyncio.CancelledError() from err
        return _failed(call, f"sub-agent {sub.name} failed: {innermost_message(err)}. {RETRY_HINT}")
    except WorkflowAlreadyStartedError:
        return _failed(
            call,
            f"a run of sub-agent {sub.name} for call {call.id} is still going; "
            "answer without it, or delegate again later",
        )
    if _parent_cancelled():
        raise DelegationCancelled(result.usage)
    if result.stop_reason == "done":
        # A sub-agent with [output] answers its validated JSON, which the parent's model reads as the result.
        answer = result.answer if result.output is None else json.dumps(result.output, ensure_ascii=False)
        return Delegated(ToolResult(call_id=call.id, name=call.name, content=answer), result.usage)
    detail = result.error or result.answer or WITHOUT_ANSWER.get(result.stop_reason, "it gave no answer")
    why = f"sub-agent {sub.name} stopped with {result.stop_reason}: {detail.rstrip('.')}. {RETRY_HINT}"
    return Delegated(_failure(call, why), result.usage)


def _as_single_call(spec: AgentSpec) -> AgentSpec:
    """Prompty's `single` mode: the agent's instructions and model, one call, no tools.

    One call leaves no step to ask again for an `[output]` that did not validate, so its retries are none: the
    sub-agent ends `error` naming what did not validate (not `max_steps`), and the parent's model may delegate
    again."""
    return spec.model_copy(
        update={
            "output": spec.output and spec.output.model_copy(update={"retries": 0}),
            "tools": [],
            "mcp_servers": [],
            "sub_agents": [],
            "bindings": {},
            "require_approval": [],
            "budgets": spec.budgets.model_copy(update={"max_steps": 1, "finalize_on_budget": False}),
        }
    )


def _drawn(budgets: Budgets, context: DelegationContext) -> Budgets:
    """The sub-agent's token and cost budgets, each capped at what the parent has left of it.

    Not its time: the parent's deadline cancels the child, and goes down to it as
    `RunInput.deadline`, which caps its calls. A child timer set to the parent's
    remaining seconds fires at the same moment, often a few milliseconds first;
    the parent then reads `max_seconds` as an ordinary failure and asks the
    model again just before its own deadline cuts it off.
    """
    caps: dict[str, Any] = {}
    for name, left in (("max_tokens", context.remaining_tokens), ("max_cost_usd", context.remaining_cost_usd)):
        if left is not None:
            own = getattr(budgets, name)
            caps[name] = left if own is None else min(own, left)
    return budgets.model_copy(update=caps)


def _spent_budget(context: DelegationContext) -> str | None:
    """The first of the parent's budgets that is used up, if any: no sub-agent can start on nothing."""
    for name, left in (
        ("token", context.remaining_tokens),
        ("time", context.remaining_seconds),
        ("cost", context.remaining_cost_usd),
    ):
        if left is not None and left <= 0:
            return name
    return None


def _parent_cancelled() -> bool:
    """Whether this delegation was cancelled from above (the run cancelled, or its wall-clock budget reached).

    The SDK then asks the child to cancel and waits for it to end, so the
    child's outcome arrives as usual; only the cancellation count of the
    waiting task tells that the parent no longer wants it.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _may_act(sub: SubAgent) -> bool:
    spec = sub.spec
    return sub.mode == "agentic" and spec is not None and bool(spec.tools or spec.mcp_servers or spec.sub_agents)


def _own_description(sub: SubAgent) -> str:
    if sub.spec is not None and sub.spec.description:
        return sub.spec.description
    if sub.url is not None:
        return f"A remote agent at {sub.url}."
    return f"The {sub.name} agent: give it a task and it answers."


# -- remote sub-agents: A2A -----------------------------------------------------


async def _remote(call: ToolCall, sub: SubAgent, url: str, task: str, context: DelegationContext) -> Delegated:
    deadline = context.deadline
    request = A2ADelegateRequest(
        url=url,
        task=task,
        idempotency_key=context.key(call),
        auth_token_env=sub.auth_token_env,
        deadline=deadline,
    )
    try:
        # The activity's timeouts end at the parent's deadline, so no attempt starts after it even while the
        # parent cannot run; one that ran out there is the parent's budget ending, not a failure for the model.
        answer = await policy.delegate(request, summary=f"delegate to {sub.name} · {url}"[:200], deadline=deadline)
    except ActivityError as err:
        if deadlines.budget_over(err, deadline):
            raise deadlines.DeadlineReached() from err
        return _failed(call, f"remote agent {sub.name} ({url}): {message_unless_cancelled(err)}")
    content = answer.text
    if answer.state == "input-required":
        content = (
            f"{answer.agent_name} needs more to go on and asks: {answer.text}\n"
            "Delegate again with the whole task and the answer to this question."
        )
    return Delegated(ToolResult(call_id=call.id, name=call.name, content=content), Usage())


async def _with_card(spec: ToolSpec) -> ToolSpec:
    sub = spec.sub_agent
    if sub is None or sub.url is None or sub.description:
        return spec
    try:
        card = await policy.describe(
            A2ADescribeRequest(url=sub.url, auth_token_env=sub.auth_token_env),
            summary=f"read the A2A card of {sub.name} · {sub.url}"[:200],
        )
    except ActivityError as err:
        unread = f"A remote agent at {sub.url} (its A2A card could not be read: {message_unless_cancelled(err)})."
        return spec.model_copy(update={"description": unread})
    return spec.model_copy(update={"description": card.summary()})


# -- results --------------------------------------------------------------------


def _failure(call: ToolCall, why: str) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, error=FAILED.format(why=why), hint=None)


def _failed(call: ToolCall, why: str) -> Delegated:
    return Delegated(_failure(call, why), Usage())
