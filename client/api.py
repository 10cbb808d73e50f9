"""The typed Python API for starting, following, cancelling and listing agent runs."""

from __future__ import annotations

import asyncio
import builtins
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowHistoryEventFilterType,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import QueryRejectCondition, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError

from stalwart.client.connection import connect, ui_base
from stalwart.client.decisions import Taken, taken
from stalwart.client.queries import matching
from stalwart.client.reader import ClosedRun, RunDescription, RunReader
from stalwart.client.reader import RunWithoutResult as RunWithoutResult  # raised by the reads: importable here too
from stalwart.client.run_failures import RunEndedInError
from stalwart.client.stream import Progress, StreamEvent, StreamOffset, stream_answer
from stalwart.client.unknown_runs import naming_unknown_runs
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, OutputSpec, unknown_tool_names
from stalwart.contracts.approvals import ApprovalDecision, PendingApproval
from stalwart.contracts.errors import RunFailed, UsageError
from stalwart.contracts.model import Contract
from stalwart.contracts.run import AgentResult, RunEvent, StepRecord, StopReason
from stalwart.contracts.run_input import RunInput, goal_problem, message_problem, missing_goal
from stalwart.contracts.send_result import SendResult
from stalwart.contracts.start_options import start_metadata

if TYPE_CHECKING:
    from temporalio.api.history.v1 import HistoryEvent

    from stalwart.contracts.activities import ModelContext

_CONTINUING_PATIENCE_SECONDS = 300.0
_T = TypeVar("_T")
_CLOSED_STATUSES = set(get_args(StopReason))  # a run that stopped, for whatever reason


class RunSummary(Contract):
    """One line of `stalwart runs`: a run as its search attributes describe it."""

    run_id: str
    agent: str | None
    status: str | None
    """The run's own status (`AgentStatus`), or `terminated` / `timed_out` for a run ended from outside its code."""
    steps: int | None
    tokens: int | None
    cost_usd: float | None
    started_at: datetime | None
    closed_at: datetime | None
    temporal_status: str | None


class UpdateRefused(UsageError, WorkflowUpdateFailedError):
    """The run refused what was sent to it by update, saying why: a `StalwartError`, and still the SDK's
    `WorkflowUpdateFailedError` (its `cause` the run's own refusal), so code that caught that keeps catching it."""

    def __init__(self, said: str, cause: BaseException) -> None:
        WorkflowUpdateFailedError.__init__(self, cause)
        self.args = (said,)


class DecisionRefused(UpdateRefused):
    """An approval or rejection the run did not take: no such call waits (an unknown id, one already decided), or
    the run has ended. `decided` says how the call was decided, when it was."""

    def __init__(self, said: str, cause: BaseException, decided: Taken | None = None) -> None:
        super().__init__(said, cause)
        self.decided = decided


class MessageRefused(UpdateRefused):
    """A message the session did not take: empty, over its `max_message_chars`, or sent while it closes."""


class RunExists(UsageError, WorkflowAlreadyStartedError):
    """A run was asked to start under an id a run already has: an open one (never taken over), or one that has
    closed when the start said not to reuse it (`reuse_id=False`, for a caller who follows runs by their id: a
    client still reading the old run, its stream or its approvals, would be handed the new one). `closed` says
    which; still the SDK's `WorkflowAlreadyStartedError`."""

    def __init__(self, said: str, cause: WorkflowAlreadyStartedError, *, closed: bool) -> None:
        WorkflowAlreadyStartedError.__init__(
            self, cause.workflow_id, cause.workflow_type, run_id=cause.run_id, first_run_id=cause.first_run_id
        )
        self.args = (said,)
        self.closed = closed


class InvalidRunInput(UsageError, ValueError):
    """A run that cannot start as asked (a goal over the agent's limit): refused before anything is sent."""


def run_input(
    spec: AgentSpec, goal: str = "", *, inputs: dict[str, Any] | None = None, session: bool = False
) -> RunInput:
    """The workflow input, checked here first: what the workflow would refuse is refused before the run starts."""
    problem = missing_goal(goal, session=session) or goal_problem(goal, spec) or unknown_tool_names(spec)
    if problem:
        raise InvalidRunInput(problem)
    return RunInput(agent=spec, goal=goal, inputs=inputs or {}, session=session)


@naming_unknown_runs
class RunHandle(RunReader):
    """A run that was started, running or finished: read it (`RunReader`), wait for it and act on it."""

    def __init__(self, client: Client, handle: WorkflowHandle[Any, Any], ui_url: str) -> None:
        super().__init__(client.workflow_service, client.namespace, client.data_converter, handle.id, ui_url)
        self._client = client
        self._handle = handle

    async def result(self, *, output_type: Any = None) -> AgentResult:
        """Wait for the run to end and return its answer, stop reason and whole step log.

        With `output_type` (a pydantic model, a dataclass, `list[int]` ...), an agent with `[output]` gives its
        `output` as an instance of that type (`AgentResult.output_as`); it stays None when the run gave none.
        Raises `RunEndedInError` (a `RunFailed`, and the SDK's `WorkflowFailureError`) if the run ended failed."""
        try:
            ended = await self._handle.result()
        except WorkflowFailureError as failure:
            raise RunEndedInError(failure) from failure.cause
        return (await self._joined(ended)).with_output_as(output_type)

    async def describe(self) -> RunDescription:
        described = await self._handle.describe()
        return RunDescription(
            status=int(described.status or 0),
            task_queue=described.task_queue,
            search_attributes=described.typed_search_attributes,
        )

    async def history_events(self, *, page_size: int = 0, close_event: bool = False) -> AsyncIterator[HistoryEvent]:
        events = self._handle.fetch_history_events(
            page_size=page_size or None,
            event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            if close_event
            else WorkflowHistoryEventFilterType.ALL_EVENT,
        )
        async for event in events:
            yield event

    async def query(self, name: str, result_type: Any, *, rpc_timeout: timedelta, open_only: bool = False) -> Any:
        try:
            return await self._handle.query(
                name,
                result_type=result_type,
                rpc_timeout=rpc_timeout,
                reject_condition=QueryRejectCondition.NOT_OPEN if open_only else None,
            )
        except WorkflowQueryRejectedError as err:
            raise ClosedRun(f"run {self.run_id} has closed") from err

    async def follow(
        self,
        callback: Callable[[RunEvent], Awaitable[None] | None],
        *,
        poll_interval: float = 0.2,
        progress: bool = True,
        skip: Iterable[str] = (),
    ) -> AgentResult:
        """Call `callback` with every event of the run as it happens, in order, then return the run's result.

        The Strands loop's callback handler, on the client side: `user_message`, `progress` (unless `progress` is
        false), `tool_call`, `tool_result`, `tool_error`, `delegation_*`, `agent_response`, `error`, each once its
        step has recorded it. Delivery is at least once: a consumer that follows again (after a crash, say) is given
        the events again, with the same `event_id`s, so it can skip what it handled (or pass those ids as `skip`).
        `callback` may be a coroutine function; an exception it raises ends the following.
        """
        from stalwart.workflows.conversation import events  # the workflow's own vocabulary, loaded when asked

        delivered = set(skip)
        max_steps = await self.max_steps() if progress else None
        while True:
            state = await self.state()
            for event in events(state.steps, max_steps=max_steps, status=state.status, answer=state.answer):
                if event.event_id in delivered:
                    continue
                delivered.add(event.event_id)
                outcome = callback(event)
                if outcome is not None:
                    await outcome
            if state.status in _CLOSED_STATUSES:
                return await self.result()
            await asyncio.sleep(poll_interval)

    async def approve(self, call_id: str, *, reason: str | None = None, reviewer: str | None = None) -> None:
        """Let a waiting tool call run. Raises `DecisionRefused` if no such call waits, or the run has ended."""
        await self._decide("approve", ApprovalDecision(call_id=call_id, reason=reason, reviewer=reviewer))

    async def reject(self, call_id: str, *, reason: str, reviewer: str | None = None) -> None:
        """Refuse a waiting tool call; the model reads `reason` as the call's result. Raises `DecisionRefused` as
        `approve` does."""
        await self._decide("reject", ApprovalDecision(call_id=call_id, reason=reason, reviewer=reviewer))

    async def _decide(self, update: str, decision: ApprovalDecision) -> None:
        try:
            await self._handle.execute_update(update, decision)
        except WorkflowUpdateFailedError as err:
            # Once a call has gone on, the run no longer says it was decided: its history does.
            decided = await taken(await self.histories(), self.data_converter, decision.call_id)
            said = (
                f"tool call {decision.call_id!r} of run {self.run_id} has been {decided} already: a call is "
                "decided once"
                if decided is not None
                else str(err.cause)
            )
            raise DecisionRefused(said, err.cause, decided) from err.cause
        except RPCError as err:  # Temporal answers an update of a closed run as if the id were unknown
            if (await self.describe()).running:
                raise
            said = f"run {self.run_id} has ended, so none of its calls waits for a decision; `state()` says how"
            raise DecisionRefused(said, err) from err

    async def history(self) -> WorkflowHistory:
        """The latest run's full Temporal event history: the audit log, and the input of a replay test."""
        return await self._handle.fetch_history()

    async def histories(self) -> builtins.list[WorkflowHistory]:
        """Every run of the continue-as-new chain, oldest first."""
        from stalwart.client.chain import chain_histories  # storage and the context window: 130 ms of a start

        return await chain_histories(self._client, self.run_id)

    async def model_input(self, step: int) -> ModelContext:
        """Exactly what the model was sent at `step`, rebuilt from history and storage."""
        from stalwart.client.chain import model_input_at  # storage and the context window: 130 ms of a start

        return await model_input_at(self._client, await self.histories(), step)

    async def cancel(self) -> bool:
        """Ask the run to stop; it ends with stop reason `cancelled` and keeps its steps. False, and nothing is sent,
        when it had already ended (Temporal takes a cancellation of a closed run and does nothing)."""
        if not (await self.describe()).running:
            return False
        await self._handle.cancel()
        return True

    async def stream(
        self,
        poll_interval: float = 0.1,
        *,
        progress: bool = False,
        push: bool = True,
        after: StreamOffset | str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The final answer's text as the model generates it, until the run ends (see `client.stream`).

        With `progress`, a `Progress` (the progress block) comes before each action too. The text is
        pushed by the worker when it offers that (`push=False` reads it by polling only, every `poll_interval`).
        Every event carries its `offset`; with `after` (one of them, or its `str()` kept as text), the stream yields
        exactly what followed it: a consumer that stopped resumes where it was. `ForeignOffset` when `after` is no
        point of this run (another run's, or past its last step). Steps come in order, and a session's answers are
        read across continue-as-new (the whole chain's step log, as `state()` reads it).
        """
        events = stream_answer(
            self._handle,
            poll_interval=poll_interval,
            live_state=self.state,
            result=self.result,
            progress_max_steps=await self.max_steps() if progress else None,
            push=push,
            after=after,
        )
        async for event in events:
            yield event

    async def watch(
        self, poll_interval: float = 0.2, *, progress: bool = False
    ) -> AsyncIterator[StepRecord | Progress]:
        """Yield each step once it has finished, in log order, until the run ends.

        With `progress`, each action (a tool call or a delegation) is announced by a `Progress`, the
        progress block, as soon as it starts: before its step, which comes once the action has finished.
        """
        max_steps = await self.max_steps() if progress else None
        announced: set[tuple[int, str | None, str]] = set()
        seen = 0
        while True:
            state = await self.state()
            finished = 0
            for step in state.steps:
                if step.ended_at is None:
                    break
                finished += 1
            for index, step in enumerate(state.steps[seen:], start=seen):
                if max_steps is not None and step.role == "tool":
                    announcement = Progress.of(step, max_steps)
                    if announcement.key not in announced:
                        announced.add(announcement.key)
                        yield announcement
                if index < finished:
                    yield step
            seen = max(seen, finished)
            if state.status in _CLOSED_STATUSES:
                return
            await asyncio.sleep(poll_interval)


class SessionClosed(RunFailed, RuntimeError):
    """The session has ended; it takes no more messages."""


@naming_unknown_runs
class SessionHandle(RunHandle):
    """A session: a run that stays open and answers each message as one turn."""

    async def send(self, message: str, *, output_type: Any = None) -> AgentResult:
        """Send a message and wait for the turn that reads it to end; that turn's result (its `output` an instance
        of `output_type` when given, as `RunHandle.result` gives it).

        Raises `MessageRefused` naming the problem when the session refuses the message (empty, too long, sent
        while it closes), and `SessionClosed` when it has ended.
        """
        _output_spec(output_type)  # a type that cannot be read is refused before the message goes
        try:
            turn = await retrying_while_continuing(
                lambda: self._handle.execute_update("send", message, result_type=SendResult)
            )
            return turn.restored(message).with_output_as(output_type)
        except WorkflowUpdateFailedError as err:
            raise MessageRefused(str(err.cause), err.cause) from err.cause
        except RPCError as err:
            description = await self._handle.describe()
            if description.status != WorkflowExecutionStatus.RUNNING:
                raise SessionClosed(
                    f"session {self.run_id} has ended ({_status_name(description.status)}): "
                    "start a new one with `stalwart session start AGENT_FILE`"
                ) from err
            raise

    async def post(self, message: str) -> None:
        """Deliver a message without waiting for its answer (a signal); the model reads it at its next step."""
        await self._handle.signal("message", message)

    async def close(self) -> AgentResult:
        """End the session once the messages already received are answered; its final result. Raises
        `UpdateRefused` when the run is not a session."""
        try:
            await self._handle.execute_update("close", result_type=str)
        except WorkflowUpdateFailedError as err:
            raise UpdateRefused(str(err.cause), err.cause) from err.cause
        return await self.result()


def _spec(agent: AgentSpec | str | Path) -> AgentSpec:
    """The agent itself, or the one its agent file describes (the file reader is loaded only when one is read)."""
    if isinstance(agent, AgentSpec):
        return agent
    from stalwart.client.agent_files import load_agent  # 15 ms that `send`, `approve` and `show` do without

    return load_agent(agent)


def _output_spec(output_type: Any) -> OutputSpec | None:
    """The output spec of `output_type`, or None without one; `OutputTypeError` for a type pydantic builds no JSON
    Schema for, raised before a run starts or a message goes rather than once the answer is read."""
    return None if output_type is None else OutputSpec.for_type(output_type)


def _address(client: Client) -> str | None:
    config = getattr(client.service_client, "config", None)
    address = getattr(config, "target_host", None)
    return address if isinstance(address, str) else None


class StalwartClient:
    """Starts and finds agent runs on a Temporal cluster."""

    def __init__(self, client: Client, *, task_queue: str = names.TASK_QUEUE, ui_url: str | None = None) -> None:
        self.temporal = client
        self.task_queue = task_queue
        self.ui_url = ui_base(_address(client), ui_url)

    @classmethod
    async def connect(
        cls,
        address: str | None = None,
        namespace: str | None = None,
        *,
        task_queue: str = names.TASK_QUEUE,
        ui_url: str | None = None,
        profile: str | None = None,
        config_file: str | os.PathLike[str] | None = None,
    ) -> StalwartClient:
        """Connect with the settings the `temporal` CLI reads (TEMPORAL_* variables, config profiles: API key,
        TLS certificates); `address` and `namespace` override them. See `stalwart.client.connection.connect`."""
        temporal = await connect(address, namespace, profile=profile, config_file=config_file)
        return cls(temporal, task_queue=task_queue, ui_url=ui_url)

    async def start(
        self,
        agent: AgentSpec | str | Path,
        goal: str,
        *,
        inputs: dict[str, Any] | None = None,
        run_id: str | None = None,
        reuse_id: bool = True,
    ) -> RunHandle:
        """Start a run of `agent` (a spec or the path of an agent file) towards `goal`.

        `run_id` may be the id of a run that has closed, which then names the new run (Temporal's rule: a
        schedule, a retrying caller or a daily job reuse their ids); `reuse_id=False` refuses it with `RunExists`,
        for a caller who follows runs by their id and must never be handed another. The id of an open run always
        raises `RunExists`: an open run is never taken over."""
        spec = _spec(agent)
        run_id = run_id or f"{spec.name}-{uuid.uuid4().hex[:12]}"
        try:
            handle = await self.temporal.start_workflow(
                names.WORKFLOW_TYPE,
                run_input(spec, goal, inputs=inputs),
                id=run_id,
                result_type=AgentResult,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE
                if reuse_id
                else WorkflowIDReusePolicy.REJECT_DUPLICATE,
                **self._start_options(spec, goal, status="running"),
            )
        except WorkflowAlreadyStartedError as err:
            raise await self._exists(err) from None
        return RunHandle(self.temporal, handle, self.ui_url)

    async def _exists(self, err: WorkflowAlreadyStartedError) -> RunExists:
        """The refusal of a start under an id a run has, saying whether that run is open or closed and what to do."""
        run_id = err.workflow_id
        how = (await self.get(run_id).describe()).how_ended  # as the command line says it: `max_steps`, not `completed`
        if how == "running":
            said = f"run {run_id} is running already: choose a new id, or leave it out for a fresh one"
        else:
            said = (
                f"a run with id {run_id} has closed ({how}), and reuse_id=False keeps its id from naming another "
                "run: choose a new id, or leave it out for a fresh one"
            )
        return RunExists(said, err, closed=how != "running")

    async def run(
        self,
        agent: AgentSpec | str | Path,
        goal: str,
        *,
        inputs: dict[str, Any] | None = None,
        output_type: Any = None,
    ) -> AgentResult:
        """Start a run and wait for its result (its `output` an instance of `output_type` when given).

        An agent without `[output]` is given one for `output_type`, as `execute_agent` does: the model is told the
        type and held to its schema. Raises `OutputNotOfType` for an answer that fits the schema but not the type."""
        spec = _spec(agent)
        output = _output_spec(output_type)
        if output is not None and spec.output is None:
            spec = spec.model_copy(update={"output": output})
        return await (await self.start(spec, goal, inputs=inputs)).result(output_type=output_type)

    def get(self, run_id: str) -> RunHandle:
        """A handle on an existing run."""
        return RunHandle(self.temporal, self.temporal.get_workflow_handle(run_id, result_type=AgentResult), self.ui_url)

    def session(self, session_id: str) -> SessionHandle:
        """A handle on an existing session."""
        handle = self.temporal.get_workflow_handle(session_id, result_type=AgentResult)
        return SessionHandle(self.temporal, handle, self.ui_url)

    async def start_session(
        self,
        agent: AgentSpec | str | Path,
        *,
        session_id: str | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> SessionHandle:
        """Start a session of `agent`: a run that stays open and answers each message sent to it."""
        spec = _spec(agent)
        session_id = session_id or f"{spec.name}-session-{uuid.uuid4().hex[:12]}"
        handle = await self.temporal.start_workflow(
            names.WORKFLOW_TYPE,
            run_input(spec, inputs=inputs, session=True),
            id=session_id,
            result_type=AgentResult,
            **self._start_options(spec, "session", status="waiting"),
        )
        return SessionHandle(self.temporal, handle, self.ui_url)

    async def send(
        self,
        session_id: str,
        message: str,
        *,
        agent: AgentSpec | str | Path | None = None,
        inputs: dict[str, Any] | None = None,
        output_type: Any = None,
    ) -> AgentResult:
        """Send a message to a session and wait for its turn's result (its `output` an instance of `output_type`
        when given).

        With `agent`, the session is started first if it does not exist yet, in the same round
        trip (update-with-start), so the same call creates the session or talks to it.
        """
        if agent is None:
            return await self.session(session_id).send(message, output_type=output_type)
        spec = _spec(agent)
        _output_spec(output_type)
        if (problem := message_problem(message, spec)) is not None:  # the session would refuse it: say so first
            raise InvalidRunInput(problem)

        async def send() -> SendResult:
            operation: WithStartWorkflowOperation[Any, AgentResult] = WithStartWorkflowOperation(
                names.WORKFLOW_TYPE,
                run_input(spec, inputs=inputs, session=True),
                id=session_id,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                result_type=AgentResult,
                **self._start_options(spec, "session", status="waiting"),
            )
            return await self.temporal.execute_update_with_start_workflow(
                "send", message, start_workflow_operation=operation, result_type=SendResult
            )

        try:
            sent = await retrying_while_continuing(send)
        except WorkflowUpdateFailedError as err:
            raise MessageRefused(str(err.cause), err.cause) from err.cause
        return sent.restored(message).with_output_as(output_type)

    def _start_options(self, spec: AgentSpec, what: str, *, status: str) -> dict[str, Any]:
        """What the Temporal UI shows of a new run, and its first search attributes (`start_metadata`, as a user's
        workflow starting an agent gives them too)."""
        return {"task_queue": self.task_queue, **start_metadata(spec, what, status=status)}

    async def list(self, query: str | None = None, limit: int | None = 20) -> list[RunSummary]:
        """Recent runs, newest first (the newest `limit`, or every one with None); `query` is a Temporal visibility
        query such as `AgentStatus="done"`.

        A run or session that continued as new is one entry, its latest run: the runs it continued from keep
        their last search attributes (a session's `waiting`, say) but are not what a user means by the run.
        A query that names `ExecutionStatus` itself chooses among them instead.
        """
        base = f'WorkflowType="{names.WORKFLOW_TYPE}"'
        if "executionstatus" not in (query or "").lower():
            base += " AND ExecutionStatus != 'ContinuedAsNew'"
        runs: list[RunSummary] = []
        async for execution in matching(self.temporal, f"{base} AND ({query})" if query else base, limit=limit):
            attrs = execution.typed_search_attributes
            runs.append(
                RunSummary(
                    run_id=execution.id,
                    agent=attrs.get(names.AGENT_NAME),
                    status=_status_name(execution.status)
                    if execution.status in _ENDED_FROM_OUTSIDE
                    else attrs.get(names.AGENT_STATUS),
                    steps=attrs.get(names.AGENT_STEPS),
                    tokens=attrs.get(names.AGENT_TOKENS),
                    cost_usd=attrs.get(names.AGENT_COST_USD),
                    started_at=execution.start_time,
                    closed_at=execution.close_time,
                    temporal_status=_status_name(execution.status),
                )
            )
        return runs

    async def awaiting_approval(
        self, limit: int | None = None
    ) -> builtins.list[tuple[str, builtins.list[PendingApproval]]]:
        """Runs that wait for approvals, newest first, with their pending calls: every one, or the newest `limit`.

        Every one by default: an inbox that left runs out would leave the oldest, the first that
        `approval_timeout_seconds` rejects, unseen."""
        runs = await self.list(AWAITING_APPROVAL, limit=limit)
        return [(run.run_id, await self.get(run.run_id).pending_approvals()) for run in runs]


AWAITING_APPROVAL = "AgentAwaitingApproval = true AND ExecutionStatus = 'Running'"
"""The visibility query of the runs that wait for a person's decision on a tool call."""


def session_continuing(err: WorkflowUpdateFailedError) -> bool:
    """Whether the session refused the update because it was continuing as new (it takes no message then)."""
    cause = err.cause
    return isinstance(cause, ApplicationError) and cause.type == names.SESSION_CONTINUING


async def retrying_while_continuing(
    send: Callable[[], Awaitable[_T]], patience_seconds: float = _CONTINUING_PATIENCE_SECONDS
) -> _T:
    """Send again a message refused because the session was continuing as new, for up to `patience_seconds`.

    Continuing takes a moment, or as long as a worker outage lasts: by default keep trying for a few minutes.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + patience_seconds
    delay = 0.05
    while True:
        try:
            return await send()
        except WorkflowUpdateFailedError as err:
            if not session_continuing(err) or loop.time() > give_up:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


_ENDED_FROM_OUTSIDE = (WorkflowExecutionStatus.TERMINATED, WorkflowExecutionStatus.TIMED_OUT)
"""Ends the workflow's code never sees: its `AgentStatus` stays what it was (`awaiting_approval`, say), so a run's
status is the end Temporal records."""


def _status_name(status: WorkflowExecutionStatus | None) -> str | None:
    return status.name.lower() if status is not None else None
