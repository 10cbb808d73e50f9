"""A run read through the Temporal service alone: its description, its history and its live queries.

Reading a run takes a few RPCs, the data converter and the contracts. The SDK's `Client` above those RPCs
costs a command about 80 ms more to import than the service client under it (bench/cli_start.py), so the
commands that only read (`stalwart show`, `pending RUN`) connect with the service client alone, and
`RunHandle`, which also acts on a run and waits for it, reads through this same class.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar, cast

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import HistoryEventFilterType, QueryRejectCondition, WorkflowExecutionStatus
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
    GetWorkflowExecutionHistoryRequest,
    QueryWorkflowRequest,
)
from temporalio.common import TypedSearchAttributes
from temporalio.converter import DataConverter, decode_typed_search_attributes
from temporalio.service import RPCError, RPCStatusCode, WorkflowService

from stalwart.client.pollers import workers_polling
from stalwart.client.task_failures import failed_task, failing_task_note
from stalwart.client.unknown_runs import naming_unknown_runs
from stalwart.contracts import names
from stalwart.contracts.approvals import PendingApproval
from stalwart.contracts.errors import RunFailed
from stalwart.contracts.model import Contract
from stalwart.contracts.run import (
    AgentResult,
    RunEvent,
    RunHeading,
    RunState,
    RunStatus,
    StepArchive,
    StepRecord,
    run_metrics,
)

if TYPE_CHECKING:
    from temporalio.api.history.v1 import HistoryEvent

    from stalwart.contracts.run_input import RunInput

_QUERY_ATTEMPTS = 6
_QUERY_RPC_TIMEOUT = timedelta(seconds=3)
_FIRST_TRY_TIMEOUT = timedelta(seconds=1)
"""A worker that holds the run answers a query in milliseconds; when the first try of `_ask` times out, whether a
worker polls at all decides between a second try and reading the run's history."""
_SECOND_TRY_TIMEOUT = timedelta(seconds=1)
"""The second try of `_ask`, once the first timed out with pollers listed: by then the server has given up on the
worker that held the run (its sticky queue's timeout, `workers/worker.py`), so a live worker takes the query at
once, replaying the run first. Pollers still listed for a worker that was killed would hold every longer try
until its timeout: after this one, the run is read from its history."""
_Input = TypeVar("_Input", bound=Contract)
_STATUS_PREFIX = "WORKFLOW_EXECUTION_STATUS_"


_CLOSED_STATUSES: dict[str, RunStatus] = {"terminated": "terminated", "timed_out": "timed_out", "canceled": "cancelled"}
"""A run's status when Temporal closed it without a result, by Temporal's name for it; any other is `failed`."""


class RunWithoutResult(RunFailed, RuntimeError):
    """Raised by no read: a run closed without a result is read from its history (`_ended_without_result`). Kept
    for code that catches it."""


class _Unanswered(Exception):
    """No worker answered a query: read the run from its history instead."""


class ClosedRun(Exception):
    """A query asked of the open run only (`open_only`) found it closed: the server says so without a worker."""


def _unanswered(err: RPCError) -> bool:
    """A query that timed out, or that the server refused for want of a worker ("no poller seen")."""
    return err.status in (
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
        RPCStatusCode.FAILED_PRECONDITION,
    ) or "no poller" in str(err)


@dataclass(frozen=True)
class RunDescription:
    """What the server says of a run's latest execution, without reading its history."""

    status: int
    """A `temporalio.api.enums.v1.WorkflowExecutionStatus` value."""
    task_queue: str
    search_attributes: TypedSearchAttributes

    @property
    def running(self) -> bool:
        return self.status == WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING

    @property
    def completed(self) -> bool:
        return self.status == WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED

    @property
    def status_name(self) -> str:
        """`running`, `completed`, `failed`, `continued_as_new` ...: Temporal's status as `stalwart runs` shows it."""
        return (
            WorkflowExecutionStatus.Name(cast(WorkflowExecutionStatus.ValueType, self.status))
            .removeprefix(_STATUS_PREFIX)
            .lower()
        )

    @property
    def how_ended(self) -> str:
        """How the run ended, as `stalwart runs` shows it: its own stop reason (`done`, `cancelled`, `max_steps`, ...)
        when its code completed it, else Temporal's status (`terminated`, `timed_out`, `failed`), an end its code
        never saw; `running` while it runs. Every command and `RunExists` say it so (docs/errors.md).

        Read from the search attributes, not the history: a run whose payloads this process cannot decrypt says it too.
        """
        if not self.completed:
            return self.status_name
        return self.search_attributes.get(names.AGENT_STATUS) or self.status_name


@naming_unknown_runs
class RunReader:
    """A run, running or finished, as far as it can be read: its state, its events and its waiting approvals.

    Every read is of the run's latest execution, so a run that continued as new is read as one run.
    """

    def __init__(
        self, service: WorkflowService, namespace: str, data_converter: DataConverter, run_id: str, ui_url: str
    ) -> None:
        self._service = service
        self._namespace = namespace
        self._converter = data_converter
        self._execution = WorkflowExecution(workflow_id=run_id)
        self._ui_url = ui_url
        self._one_query = asyncio.Lock()
        self._archived: dict[str, builtins.list[StepRecord]] = {}  # archives never change: read each once
        self._max_steps: int | None = None
        self.offline: str | None = None
        """Set when the last `state()` or `pending_approvals()` had no worker to ask and read the run's history."""
        self.closed = False
        """Set when the last `state()` or `pending_approvals()` found the run closed: it waits on no call, so
        `retrying()` has nothing to say."""

    @property
    def run_id(self) -> str:
        """The run's id, which is its Temporal workflow id."""
        return self._execution.workflow_id

    @property
    def ui_url(self) -> str:
        """Where to look at this run in the Temporal Web UI."""
        return f"{self._ui_url}/namespaces/{self._namespace}/workflows/{self.run_id}"

    @property
    def data_converter(self) -> DataConverter:
        return self._converter

    async def state(self) -> RunState:
        """The step log, status and usage: live from the workflow while it runs, from its recorded result after.

        The log covers every run of a continue-as-new chain: earlier runs' steps come from storage.
        """
        closed = await self._closed_state()
        self.offline, self.closed = None, closed is not None
        if closed is not None:
            state = closed
        else:
            try:
                state = await self._ask("state", RunState)
            except _Unanswered:
                state, _ = await self._offline()
        if state.earlier:
            earlier = await self._archived_steps(state.earlier)
            state = state.model_copy(update={"steps": [*earlier, *state.steps], "earlier": []})
        if state.metrics is None:  # a live run: its metrics so far, from the whole chain's steps
            started = state.steps[0].started_at if state.steps else None
            elapsed = (datetime.now(UTC) - started).total_seconds() if started is not None else 0.0
            state = state.model_copy(update={"metrics": run_metrics(state.steps, elapsed_seconds=elapsed)})
        return state

    async def events(self, *, progress: bool = False) -> list[RunEvent]:
        """The run in the KAOS memory-event vocabulary (docs/concepts.md), across the whole chain.

        With `progress`, each action is announced first by a `progress` event holding seed 000's progress block.
        """
        from stalwart.workflows.conversation import events  # the workflow's own vocabulary, loaded when asked

        state = await self.state()
        notes = [note.as_event() for note in state.notes]  # what the run could not use, as `error` events
        max_steps = await self.max_steps() if progress else None
        return events(state.steps, max_steps=max_steps, status=state.status, answer=state.answer) + notes

    async def max_steps(self) -> int:
        """The agent's `max_steps`, as the run was started with it (read from history once)."""
        if self._max_steps is None:
            self._max_steps = (await self.run_input()).agent.budgets.max_steps
        return self._max_steps

    async def run_input(self) -> RunInput:
        """What the run was started with (agent spec, goal, inputs), read from its first history event."""
        from stalwart.contracts.run_input import RunInput  # the agent spec's contracts: not needed to show a run

        return await self._first_input(RunInput)

    async def pending_approvals(self) -> list[PendingApproval]:
        """Tool calls of this run that wait for a person's decision.

        With no worker running, they are read from the run's history and `offline` says so. A run that has ended
        has none, whatever a replay of its history would say of a call it waited on when it was terminated, and
        `closed` says so. One query, whether the run is open or closed: the query is asked of the open run only
        (Temporal's reject condition `NOT_OPEN`), so a closed run is refused by the server without a `describe`,
        a worker or a replay of its history (`stalwart pending` and `awaiting_approval` read every run listed).
        """
        self.offline, self.closed = None, False
        try:  # asked of the open run only: the server refuses a closed one at once, so no `describe` is needed
            return cast(
                list[PendingApproval], await self._ask("pending_approvals", list[PendingApproval], open_only=True)
            )
        except ClosedRun:
            self.closed = True
            return []
        except _Unanswered:
            return (await self._offline())[1]

    # -- the service: `RunHandle` reads the same through the SDK's client and its interceptors -----------

    async def describe(self) -> RunDescription:
        """The latest execution's status, task queue and search attributes."""
        described = await self._described()
        info = described.workflow_execution_info
        return RunDescription(
            status=info.status,
            task_queue=described.execution_config.task_queue.name,
            search_attributes=decode_typed_search_attributes(info.search_attributes),
        )

    async def failing_task(self) -> str | None:
        """Why workers fail this run's workflow task again and again (a worker without the key the run was sealed
        with, code that cannot replay it), or None: a run that waits on it would otherwise wait in silence."""
        described = await self._described()
        if described.pending_workflow_task.attempt < 2:  # cheap: the history is read only once a task is retried
            return None
        kind = failed_task([event async for event in self.history_events()])
        return None if kind is None else failing_task_note(kind)

    async def retrying(self) -> builtins.list[str]:
        """Why each call the run waits on failed its last attempt while Temporal tries it again (a `base_url` whose
        host does not resolve, an agent that is down): a run that retries would otherwise look like one that works.
        """
        notes = []
        for pending in (await self._described()).pending_activities:
            if not pending.HasField("last_failure"):
                continue
            failure = await self._converter.decode_failure(pending.last_failure)  # its message may be encrypted
            why = getattr(failure, "message", None) or str(failure)
            when = pending.next_attempt_schedule_time
            again = f"at {when.ToDatetime():%H:%M:%S} UTC" if when.seconds else "running"
            notes.append(
                f"{pending.activity_type.name}: attempt {pending.attempt - 1} failed, attempt {pending.attempt} "
                f"{again}: {why}"
            )
        return notes

    async def _described(self) -> DescribeWorkflowExecutionResponse:
        return await self._service.describe_workflow_execution(
            DescribeWorkflowExecutionRequest(namespace=self._namespace, execution=self._execution), retry=True
        )

    async def history_events(self, *, page_size: int = 0, close_event: bool = False) -> AsyncIterator[HistoryEvent]:
        """The latest execution's history, page by page; with `close_event`, only the event that closed it."""
        request = GetWorkflowExecutionHistoryRequest(
            namespace=self._namespace,
            execution=self._execution,
            maximum_page_size=page_size,
            skip_archival=True,
            history_event_filter_type=(
                HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT
                if close_event
                else HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT
            ),
        )
        while True:
            page = await self._service.get_workflow_execution_history(request, retry=True)
            for event in page.history.events:
                yield event
            if not page.next_page_token:
                return
            request.next_page_token = page.next_page_token

    async def query(self, name: str, result_type: Any, *, rpc_timeout: timedelta, open_only: bool = False) -> Any:
        """One answer of the running workflow's query `name`, with no retry of a query that times out.

        With `open_only`, a closed run is not asked (no worker replays it): `ClosedRun` is raised instead."""
        request = QueryWorkflowRequest(
            namespace=self._namespace,
            execution=self._execution,
            query=WorkflowQuery(query_type=name),
            query_reject_condition=QueryRejectCondition.QUERY_REJECT_CONDITION_NOT_OPEN
            if open_only
            else QueryRejectCondition.QUERY_REJECT_CONDITION_UNSPECIFIED,
        )
        answered = await self._service.query_workflow(request, retry=True, timeout=rpc_timeout)
        if answered.HasField("query_rejected"):  # only a query asked `open_only` has a reject condition
            raise ClosedRun(f"run {self.run_id} has closed")
        return await self.decode(answered.query_result.payloads, result_type)

    async def decode(self, payloads: Any, kind: Any) -> Any:
        """One value of `kind` from a history event's payloads, through the data converter (codec, storage)."""
        [value] = await self._converter.decode(list(payloads), [kind])
        return value

    # -- reading the run -----------------------------------------------------

    async def _closed_state(self) -> RunState | None:
        """A closed run's state, from its history alone (input and result), so no worker is needed to answer."""
        description = await self.describe()
        if description.running:
            return None
        if not description.completed:
            return await self._ended_without_result(description)
        run_input, result = await self._first_input(RunHeading), await self._recorded_result()
        return RunState(
            agent=run_input.agent.name,
            goal=run_input.goal,
            status=result.stop_reason,
            steps=result.steps,
            usage=result.usage,
            answer=result.answer,
            output=result.output,
            error=result.error,
            session=run_input.session,
            turns=result.turns if result.turns is not None else _turns_before_they_were_recorded(result, run_input),
            runs=result.runs or 1,
            metrics=result.metrics,
        )

    async def _ended_without_result(self, description: RunDescription) -> RunState:
        """A run closed from outside or by a failure (terminated, timed out, failed): every step it took, read from
        its history as for a run no worker answers, with Temporal's status and, in `error`, why it closed."""
        from stalwart.client import offline  # the agent spec's contracts: only a run closed this way needs them

        events = [event async for event in self.history_events()]
        state, _ = await offline.rebuild(events, description.search_attributes, self._converter)
        status = _CLOSED_STATUSES.get(description.status_name, "failed")
        why = await self._why_closed(events[-1])
        ended = f"the run {status.replace('_', ' ')}" + (f": {why}" if why else "")
        closed_at = events[-1].event_time.ToDatetime().astimezone()
        steps = [
            step if step.ended_at is not None else step.model_copy(update={"ended_at": closed_at, "error": ended})
            for step in state.steps
        ]  # a call in flight or waiting for a decision when the run closed never finished
        return state.model_copy(update={"status": status, "error": ended, "offline": None, "steps": steps})

    async def _why_closed(self, event: HistoryEvent) -> str:
        """What the event that closed the run says of why (a failure's message, a termination's reason), or ''."""
        if event.HasField("workflow_execution_failed_event_attributes"):
            failure = await self._converter.decode_failure(event.workflow_execution_failed_event_attributes.failure)
            return getattr(failure, "message", None) or str(failure)
        return event.workflow_execution_terminated_event_attributes.reason

    async def _recorded_result(self) -> AgentResult:
        """The result a completed run recorded, its earlier steps joined back from storage."""
        async for event in self.history_events(close_event=True):
            completed = event.workflow_execution_completed_event_attributes
            return await self._joined(await self.decode(completed.result.payloads, AgentResult))
        raise RuntimeError(f"run {self.run_id} has no closing event")

    async def _joined(self, result: AgentResult) -> AgentResult:
        """`result` with the steps it left in storage (`earlier`) put back in front of its own."""
        if not result.earlier:
            return result
        earlier = await self._archived_steps(result.earlier)
        return result.model_copy(update={"steps": [*earlier, *result.steps], "earlier": []})

    async def _archived_steps(self, archives: builtins.list[StepArchive]) -> builtins.list[StepRecord]:
        """Steps of earlier runs of the chain, from storage."""
        # The storage drivers: only a chain that archived steps needs them (60 ms of a command's start otherwise).
        from stalwart.activities.storage.config import ObjectStore
        from stalwart.activities.transcripts import TranscriptStore

        missing = [a for a in archives if a.key not in self._archived]
        if missing:
            store = TranscriptStore(ObjectStore.from_config())
            for archive in missing:
                self._archived[archive.key] = await store.load_steps([archive])
        return [step for archive in archives for step in self._archived[archive.key]]

    async def _first_input(self, kind: type[_Input]) -> _Input:
        async for event in self.history_events(page_size=1):
            started = event.workflow_execution_started_event_attributes
            return cast(_Input, await self.decode(started.input.payloads, kind))
        raise RuntimeError(f"run {self.run_id} has no history")

    async def _offline(self) -> tuple[RunState, builtins.list[PendingApproval]]:
        from stalwart.client import offline  # the agent spec's contracts: only a run no worker answered needs them

        description = await self.describe()
        events = [event async for event in self.history_events()]
        state, pending = await offline.rebuild(events, description.search_attributes, self._converter)
        self.offline = state.offline
        return state, pending

    # -- live queries --------------------------------------------------------

    async def _ask(self, name: str, result_type: Any, *, open_only: bool = False) -> Any:
        """A live query, or `_Unanswered` when no worker answers it, instead of an error after half a minute.

        A worker that polls answers at once. When the first try times out, a task queue without live pollers
        (`client/pollers.py`: a worker that stopped cleanly is not one) means no worker runs: `_Unanswered` at
        once. With pollers listed (a live worker, perhaps still replaying the run after another died, or a dead
        one that died without a word, which the server still lists for a while) the query is tried once more,
        briefly (`_SECOND_TRY_TIMEOUT`), then given up on: `stalwart show` answers within about 3 s of a kill.
        With `open_only`, a closed run raises `ClosedRun` (`query`).
        """
        try:
            return await self._query(name, result_type, attempts=1, timeout=_FIRST_TRY_TIMEOUT, open_only=open_only)
        except RPCError as err:
            if not _unanswered(err):
                raise
        if await self._worker_polling():
            try:
                return await self._query(
                    name, result_type, attempts=1, timeout=_SECOND_TRY_TIMEOUT, open_only=open_only
                )
            except RPCError as err:
                if not _unanswered(err):
                    raise
        raise _Unanswered()

    async def _worker_polling(self) -> bool:
        """Whether a worker polls the run's task queue; when the server cannot tell, the query gets its second try."""
        polling = await workers_polling(self._service, self._namespace, (await self.describe()).task_queue)
        return polling is not False

    async def _query(
        self,
        name: str,
        result_type: Any,
        *,
        attempts: int = _QUERY_ATTEMPTS,
        timeout: timedelta = _QUERY_RPC_TIMEOUT,
        open_only: bool = False,
    ) -> Any:
        """Ask the running workflow, one query at a time.

        `stalwart run` follows steps, the streamed answer and approvals at once. Two
        queries in flight together while a workflow task runs (as at the start of a run)
        held the second back by about a second, so the first steps printed late, all at once.
        """
        async with self._one_query:
            for attempt in range(attempts):
                try:
                    return await self.query(name, result_type, rpc_timeout=timeout, open_only=open_only)
                except RPCError as err:
                    # A query that reaches a run just as it continues as new is never answered; the
                    # next one goes to the new run.
                    timed_out = err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED)
                    if not timed_out or attempt == attempts - 1:
                        raise
            raise AssertionError("unreachable")


def _turns_before_they_were_recorded(result: AgentResult, heading: RunHeading) -> int:
    """The turns of a result recorded before results counted them: a session's messages, which is more than its
    turns when one turn read several."""
    return sum(1 for step in result.steps if step.role == "user") if heading.session else 1
