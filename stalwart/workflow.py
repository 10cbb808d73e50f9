"""Agents as steps of your own workflow: `execute_agent` and `start_agent`, called from `@workflow.run`.

    from stalwart.workflow import execute_agent

    @workflow.defn
    class OrderWorkflow:
        @workflow.run
        async def run(self, order: Order) -> str:
            proposal = await execute_agent(refund_agent, f"Order {order.id}: {order.complaint}", output_type=Refund)
            refund: Refund = proposal.output
            ...

The agent runs as a child workflow of Stalwart's agent workflow, with every guarantee a run started from a client
has: its budgets, approvals, continue-as-new, search attributes and summaries in the UI. Your workflow stays
sandboxed: this module imports only the SDK and Stalwart's contracts, which `StalwartPlugin` passes through.

A workflow cannot read files: load an agent file outside it (in the worker at import time, or in the client that
starts your workflow, passing the spec in its input) and give the `AgentSpec` here.

What happens to the agent when your workflow
- is cancelled: an agent it awaits is cancelled, keeps the steps it took and ends `cancelled`; with
  `execute_agent` (and `start_agent(..., parent_close_policy=REQUEST_CANCEL)`) also when it awaits something else;
- continues as new: an agent from `start_agent` (its policy `ABANDON` by default) keeps running; carry
  `handle.id` into the next run and call `get_agent(id)` there to await it or talk to it;
- has a deadline (`execution_timeout`, `run_timeout`): it is the agent's deadline too (`RunInput.deadline`), so
  its model and tool calls stop when your workflow's time is up, and it ends with its steps kept;
- is replayed: the agent's result is in your workflow's history, as any child workflow's.
"""

from __future__ import annotations

import asyncio
import reprlib
from collections.abc import Generator
from datetime import datetime, timedelta
from os import PathLike
from typing import Any, Generic, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.workflow import ChildWorkflowHandle, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.agent import MAX_SECONDS, AgentSpec, OutputSpec, unknown_tool_names
    from stalwart.contracts.errors import UsageError
    from stalwart.contracts.output_schema import OutputTypeError
    from stalwart.contracts.run import AgentResult, OutputNotOfType
    from stalwart.contracts.run_input import RunInput, goal_problem, missing_goal
    from stalwart.contracts.start_options import start_metadata

__all__ = ["AgentHandle", "execute_agent", "get_agent", "start_agent"]

T = TypeVar("T")

INVALID_AGENT_CALL = "InvalidAgentCall"
"""The failure type of an `execute_agent`/`start_agent` call that cannot start (no goal, a goal too long, a
`require_approval` naming a tool the agent lacks, an argument of the wrong type): your workflow fails with it, or
catches it. An `ApplicationError`, so it fails the workflow at once rather than its task, which would retry the same
call forever."""
_WAITING_HEARTBEAT = timedelta(seconds=30)
_SEND_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=5))


OUTPUT_NOT_OF_TYPE = "OutputNotOfType"
"""The failure type of an agent's answer that fits its output schema but not the `output_type` asked for (a pydantic
validator, a date `format`): your workflow fails with it, or catches it; the answer is in the agent run's result."""


def _typed(result: AgentResult, output_type: type[Any] | None) -> AgentResult:
    """`result` with its output as `output_type`; one that does not fit fails the caller's workflow (not its task,
    which would retry the same check forever) with `OUTPUT_NOT_OF_TYPE`."""
    try:
        return result.with_output_as(output_type)
    except OutputNotOfType as err:
        raise ApplicationError(str(err), type=OUTPUT_NOT_OF_TYPE, non_retryable=True) from None


class AgentHandle(Generic[T]):
    """An agent run started from a workflow: await it for its `AgentResult`, or talk to it if it is a session.

    `await handle` (or `await handle.result()`) returns the run's result, with `.output` an instance of the
    `output_type` given at the start. A handle from `start_agent` waits on the child workflow itself; one from
    `get_agent` (after your workflow continued as new) waits through an activity of `StalwartPlugin`, since a
    workflow cannot await a run it did not start.
    """

    def __init__(self, id: str, output_type: type[T] | None, child: ChildWorkflowHandle[Any, Any] | None) -> None:
        self.id = id
        """The agent run's workflow id: carry it across continue-as-new and pass it to `get_agent`."""
        self._output_type = output_type
        self._child = child

    def __await__(self) -> Generator[Any, Any, AgentResult]:
        return self.result().__await__()

    async def result(self) -> AgentResult:
        """Wait for the run to end: its answer, stop reason, steps and usage, `.output` typed."""
        if self._child is not None:
            result: AgentResult = await self._child
        else:
            result = await workflow.execute_activity(
                names.AGENT_RESULT_ACTIVITY,
                self.id,
                result_type=AgentResult,
                start_to_close_timeout=timedelta(seconds=MAX_SECONDS),
                heartbeat_timeout=_WAITING_HEARTBEAT,
                summary=f"wait for agent run {self.id}"[:200],
            )
        if _cancelling():  # the run ended because this workflow is being cancelled: so is the caller
            raise asyncio.CancelledError()
        return _typed(result, self._output_type)

    async def message(self, text: str) -> None:
        """Give a session (or a running run) a message without waiting; the model reads it at its next step."""
        await self._signal("message", text)

    async def send(self, text: str) -> AgentResult:
        """Give a session a message and wait for the turn that answers it; returns that turn's result.

        A workflow cannot send an update, so an activity of `StalwartPlugin` sends it (with an update id fixed by
        this workflow, so a retried activity sends the message once)."""
        result = await workflow.execute_activity(
            names.AGENT_SEND_ACTIVITY,
            args=[self.id, text, str(workflow.uuid4())],
            result_type=AgentResult,
            start_to_close_timeout=timedelta(seconds=MAX_SECONDS),
            heartbeat_timeout=_WAITING_HEARTBEAT,
            retry_policy=_SEND_RETRY,
            summary=f"send a message to agent session {self.id}"[:200],
        )
        return _typed(result, self._output_type)

    async def close(self) -> None:
        """End the session once the messages it already received are answered; then `result()` returns."""
        await self._signal("close")

    async def cancel(self) -> None:
        """Ask the run to cancel: it stops its model and tool calls, keeps its steps and ends `cancelled`, which
        awaiting the handle then returns."""
        await workflow.get_external_workflow_handle(self.id).cancel()

    async def _signal(self, name: str, *args: Any) -> None:
        if self._child is not None:
            await self._child.signal(name, args=list(args))
        else:
            await workflow.get_external_workflow_handle(self.id).signal(name, args=list(args))


async def execute_agent(
    agent: AgentSpec,
    goal: str,
    *,
    output_type: type[T] | None = None,
    id: str | None = None,
    inputs: dict[str, Any] | None = None,
    task_queue: str | None = None,
    parent_close_policy: ParentClosePolicy = ParentClosePolicy.REQUEST_CANCEL,
) -> AgentResult:
    """Run `agent` on `goal` as a child workflow and return its `AgentResult`.

    With `output_type` (a pydantic model, a dataclass, `list[int]`: any type pydantic validates), an agent that
    declares no `output` is asked for one of that type, and the result's `.output` is an instance of it; it is
    None when the run ended without a valid answer (`stop_reason` and `error` say why).

    The run stops at your workflow's deadline, and is cancelled with your workflow (`parent_close_policy`).
    A call that cannot start fails with an `ApplicationError` of type `InvalidAgentCall`.
    """
    _inside_a_workflow("execute_agent", "`StalwartClient.run`")
    handle = await start_agent(
        agent,
        goal,
        output_type=output_type,
        id=id,
        inputs=inputs,
        task_queue=task_queue,
        parent_close_policy=parent_close_policy,
    )
    return await handle.result()


async def start_agent(
    agent: AgentSpec,
    goal: str = "",
    *,
    output_type: type[T] | None = None,
    id: str | None = None,
    session: bool = False,
    inputs: dict[str, Any] | None = None,
    task_queue: str | None = None,
    parent_close_policy: ParentClosePolicy = ParentClosePolicy.ABANDON,
) -> AgentHandle[T]:
    """Start `agent` as a child workflow and return its handle at once (see `AgentHandle`).

    With `session=True` the run stays open for messages (`handle.message`, `handle.send`, `handle.close`); its
    goal, if any, is its first message. By default the run outlives a continue-as-new of your workflow
    (`ParentClosePolicy.ABANDON`): it is still cancelled with your workflow while your workflow awaits it.
    """
    _inside_a_workflow("start_agent", "`StalwartClient.start`")
    wrong = _agent_problem(agent) or _goal_type_problem(goal) or _inputs_problem(inputs)
    if wrong:
        raise ApplicationError(wrong, type=INVALID_AGENT_CALL, non_retryable=True)
    spec = agent
    output = _output_of(output_type)
    if output is not None and spec.output is None:
        spec = spec.model_copy(update={"output": output})
    problem = missing_goal(goal, session=session) or goal_problem(goal, spec) or unknown_tool_names(spec)
    if problem:
        raise ApplicationError(problem, type=INVALID_AGENT_CALL, non_retryable=True)
    parent = workflow.info().workflow_id
    run_id = id or f"{parent}/{spec.name}-{workflow.uuid4().hex[:12]}"
    child = await workflow.start_child_workflow(
        names.WORKFLOW_TYPE,
        RunInput(agent=spec, goal=goal, inputs=inputs or {}, session=session, deadline=workflow_deadline()),
        id=run_id,
        result_type=AgentResult,
        task_queue=task_queue or workflow.info().task_queue,
        parent_close_policy=parent_close_policy,
        **start_metadata(
            spec,
            goal or "session",
            status="waiting" if session and not goal else "running",
            by=f"workflow `{parent}`",
        ),
    )
    return AgentHandle(run_id, output_type, child)


def get_agent(id: str, *, output_type: type[T] | None = None) -> AgentHandle[T]:
    """A handle on an agent run this workflow's chain started, by its id: after continue-as-new, say.

    Awaiting it waits in an activity of `StalwartPlugin`; messages and `close` go as signals, `cancel` as a
    cancellation request."""
    _inside_a_workflow("get_agent", "`StalwartClient.get(id)`")
    _output_of(output_type)
    return AgentHandle(id, output_type, None)


def _output_of(output_type: type[Any] | None) -> OutputSpec | None:
    """The output spec of `output_type`, checked before anything starts: a type pydantic builds no JSON Schema for
    (a `Callable`, an instance, a plain class) fails the caller's workflow with `INVALID_AGENT_CALL`, rather than
    its workflow task again and again, or the call once the agent has answered."""
    if output_type is None:
        return None
    try:
        return OutputSpec.for_type(output_type)
    except (OutputTypeError, ValueError) as err:  # ValueError: pydantic's ValidationError of the schema it made
        raise ApplicationError(str(err), type=INVALID_AGENT_CALL, non_retryable=True) from None


def workflow_deadline() -> datetime | None:
    """This workflow's deadline, if it has one: the run's start plus its `run_timeout` or `execution_timeout`.

    It goes to the agent as `RunInput.deadline`: no model or tool call of the agent starts or runs past it, in
    every turn, whatever the agent's own `max_seconds`. After a continue-as-new the execution's first start is
    not known here, so `execution_timeout` counts from this run's start (later than the real deadline: the agent
    may then outlive your workflow, and is cancelled with it under `REQUEST_CANCEL`)."""
    info = workflow.info()
    ends = [info.workflow_start_time + limit for limit in (info.run_timeout, info.execution_timeout) if limit]
    return min(ends) if ends else None


def _inside_a_workflow(call: str, instead: str) -> None:
    """Refuse a call made outside a workflow, of which the SDK would say only 'Not in workflow event loop'."""
    if not workflow.in_workflow():
        raise UsageError(
            f"{call} runs inside a workflow of yours (its @workflow.run or a handler); outside a workflow, "
            f"{instead} does the same"
        )


def _agent_problem(agent: object) -> str | None:
    """Why `agent` is not an agent this module can start, if it is not: said with the way to get an `AgentSpec`."""
    if isinstance(agent, AgentSpec):
        return None
    if isinstance(agent, str | PathLike):
        return (
            f"agent: {agent!r} is a path, and a workflow cannot read files: load the agent file outside the workflow "
            "(`agent = load_agent(path)` at your module's import, or in the client that starts the workflow, which "
            "passes the spec in its input) and pass the AgentSpec"
        )
    if isinstance(agent, dict):
        return "agent: got a dict; pass an AgentSpec, e.g. `AgentSpec.model_validate(the_dict)`"
    return (
        f"agent: got {type(agent).__name__}; pass an AgentSpec (`AgentSpec(...)`, or `load_agent(path)` outside the "
        "workflow)"
    )


def _goal_type_problem(goal: object) -> str | None:
    if isinstance(goal, str):
        return None
    return f"goal: got {type(goal).__name__} {reprlib.repr(goal)}; give the task as text (a str)"


def _inputs_problem(inputs: object) -> str | None:
    """Why `inputs` cannot travel to the agent's run, if it cannot: they go in its input, as JSON."""
    if inputs is None:
        return None
    if not isinstance(inputs, dict) or not all(isinstance(name, str) for name in inputs):
        return f"inputs: got {type(inputs).__name__}; give a dict of names (str) to {_JSON_VALUES}"
    converter = workflow.payload_converter()
    for name, value in inputs.items():
        try:
            converter.to_payload(value)
        except Exception as err:  # the converter's error depends on the value (pydantic's, TypeError, ValueError)
            return f"inputs[{name!r}]: {type(value).__name__} cannot be sent as JSON ({err}); give {_JSON_VALUES}"
    return None


_JSON_VALUES = "JSON values: str, numbers, bools, None, and lists and dicts of them"


def _cancelling() -> bool:
    """Whether the waiting task is being cancelled: the SDK asks the child to cancel and waits for its outcome,
    which then arrives as usual."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
