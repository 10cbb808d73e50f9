"""A running run's state read from its history, for when no worker can answer a query.

Queries are answered by a worker: while none runs, `stalwart show`, `show --events` and `pending RUN`
would wait and fail exactly when an operator needs them. Everything the live `state` and
`pending_approvals` queries report is also in the run's history, in what the workflow
recorded: its input (agent, goal), each model and tool activity's input and result, the
messages and decisions it accepted, and its search attributes (status). This module rebuilds
the two from those, without a worker. What only the workflow's memory holds (a call waiting for
a free parallel slot rather than for approval) is told apart as well as history allows.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.common import TypedSearchAttributes
from temporalio.converter import DataConverter

from stalwart.activities.storage.encryption import is_encrypted
from stalwart.client.task_failures import failed_task, failing_task_note
from stalwart.contracts import names
from stalwart.contracts.activities import DescribeToolsResult, ModelRequest, ToolRequest
from stalwart.contracts.approvals import ApprovalDecision, PendingApproval
from stalwart.contracts.messages import AssistantTurn, ToolCall, ToolResult, Usage
from stalwart.contracts.run import NOTES_KEPT, RunNote, RunState, StepRecord
from stalwart.contracts.run_input import ContinuedRunInput

NO_WORKER = (
    "no worker is running for this run's task queue (the live query went unanswered): this is read from the "
    "run's history, and the run continues when a worker starts (`stalwart worker`)"
)


class _Rebuilt:
    def __init__(self, run_input: ContinuedRunInput, started_at: datetime) -> None:
        self.run_input = run_input
        self.steps: list[StepRecord] = []
        self.usage = run_input.carried.usage if run_input.carried else Usage()
        self.tools_needing_approval = set(run_input.agent.require_approval)
        self.calls: dict[str, tuple[StepRecord, ToolCall]] = {}  # call id -> its tool step, newest first wins
        self.decided: set[str] = set()
        self.activities: dict[int, tuple[str, StepRecord | None]] = {}  # scheduled event id -> (type, its step)
        self.last_turn: tuple[int, datetime, list[ToolCall]] | None = None
        self.notes: list[RunNote] = []
        if run_input.carried is None and not run_input.session:
            self.steps.append(
                StepRecord(step=0, role="user", content=run_input.goal, started_at=started_at, ended_at=started_at)
            )

    def note(self, text: str, at: datetime) -> None:
        self.notes.append(RunNote(number=len(self.notes) + 1, at=at, text=text))


async def rebuild(
    events: list[HistoryEvent], search_attributes: TypedSearchAttributes, converter: DataConverter
) -> tuple[RunState, list[PendingApproval]]:
    """The run's state and the calls that wait for a decision, from its history and search attributes (read by
    `client/reader.py`), decoded through the run's data converter."""
    started = events[0].workflow_execution_started_event_attributes
    try:
        [run_input] = await converter.decode(list(started.input.payloads), [ContinuedRunInput])
        if not isinstance(run_input, ContinuedRunInput):  # `None`, bytes or a protobuf: not JSON, refused as well
            raise TypeError(f"the run's input is a {type(run_input).__name__}")
    except Exception:  # an input the workflow itself refuses: nothing more to read
        if any(is_encrypted(p) for p in started.input.payloads):
            raise  # sealed with a key this process lacks: the error names it (not an input started wrong)
        run_input = ContinuedRunInput.model_validate({"agent": {"name": "invalid-input"}})
    rebuilt = _Rebuilt(run_input, events[0].event_time.ToDatetime().astimezone())
    for event in events:
        try:
            await _apply(rebuilt, event, converter)
        except Exception as err:  # a payload this process cannot read: the rest of the history still can be
            rebuilt.note(f"event {event.event_id}: {undecodable(err)}", event.event_time.ToDatetime().astimezone())
    status = search_attributes.get(names.AGENT_STATUS) or "running"
    carried = run_input.carried
    state = RunState(
        agent=run_input.agent.name,
        goal=run_input.goal,
        status=status,
        steps=rebuilt.steps,
        usage=rebuilt.usage,
        session=run_input.session,
        turns=(carried.turns if carried else 0) + (0 if run_input.session else 1),
        runs=(carried.runs + 1) if carried else 1,
        earlier=carried.archives if carried else [],
        offline=_why_unanswered(events),
        notes=rebuilt.notes[-NOTES_KEPT:],
    )
    return state, _pending(rebuilt, search_attributes.get(names.AGENT_AWAITING_APPROVAL))


def _why_unanswered(events: list[HistoryEvent]) -> str:
    """NO_WORKER, unless a worker took the run's last workflow task and failed it: then starting one would not help."""
    kind = failed_task(events)
    if kind is None:
        return NO_WORKER
    return f"{failing_task_note(kind)} (the live query went unanswered: this is read from the run's history)"


async def _apply(rebuilt: _Rebuilt, event: HistoryEvent, converter: DataConverter) -> None:
    at = event.event_time.ToDatetime().astimezone()
    if event.HasField("activity_task_scheduled_event_attributes"):
        attributes = event.activity_task_scheduled_event_attributes
        kind = attributes.activity_type.name
        record = None
        if kind == names.MODEL_ACTIVITY:
            [request] = await converter.decode(list(attributes.input.payloads), [ModelRequest])
            record = next((s for s in rebuilt.steps if s.role == "assistant" and s.step == request.step), None)
            if record is None:  # a model call scheduled again after a long rate limit keeps its step
                record = StepRecord(step=request.step, role="assistant", started_at=at)
                rebuilt.steps.append(record)
            record.ended_at, record.error = None, None
        elif kind == names.RUN_TOOL_ACTIVITY:
            [tool_request] = await converter.decode(list(attributes.input.payloads), [ToolRequest])
            known = rebuilt.calls.get(tool_request.call.id)
            record = known[0] if known else None
            if record is not None:
                record.started_at, record.tool_kind = at, tool_request.tool.kind
            rebuilt.decided.add(tool_request.call.id)  # it runs: no approval is awaited any more
        rebuilt.activities[event.event_id] = (kind, record)
    elif event.HasField("activity_task_completed_event_attributes"):
        completed = event.activity_task_completed_event_attributes
        kind, record = rebuilt.activities.get(completed.scheduled_event_id, ("", None))
        payloads = list(completed.result.payloads)
        if kind == names.DESCRIBE_TOOLS_ACTIVITY:
            [described] = await converter.decode(payloads, [DescribeToolsResult])
            rebuilt.tools_needing_approval |= {t.name for t in described.tools if t.requires_approval}
        elif kind == names.MODEL_ACTIVITY and record is not None:
            [turn] = await converter.decode(payloads, [AssistantTurn])
            record.content, record.usage, record.ended_at = turn.text, turn.usage, at
            record.stop_reason = turn.stop_reason
            rebuilt.usage = rebuilt.usage + turn.usage
            rebuilt.last_turn = (record.step, at, turn.tool_calls)
            for call in turn.tool_calls:
                tool_step = StepRecord(
                    step=record.step,
                    role="tool",
                    tool_call_id=call.id,
                    tool_name=call.name,
                    arguments=call.arguments,
                    started_at=at,
                )
                rebuilt.steps.append(tool_step)
                rebuilt.calls[call.id] = (tool_step, call)
        elif kind == names.RUN_TOOL_ACTIVITY and record is not None:
            [result] = await converter.decode(payloads, [ToolResult])
            _tool_ended(record, result, at)
    elif event.HasField("marker_recorded_event_attributes"):
        await _apply_fast_tool(rebuilt, event.marker_recorded_event_attributes, at, converter)
    else:
        which = event.WhichOneof("attributes") or ""
        if which in _ACTIVITY_ENDINGS:
            ended = getattr(event, which)
            _, record = rebuilt.activities.get(ended.scheduled_event_id, ("", None))
            if record is not None:
                failure = getattr(ended, "failure", None)
                message = _innermost(failure) if failure is not None else "cancelled"
                record.ended_at, record.error = at, message or _ACTIVITY_ENDINGS[which]
            return
        await _apply_message(rebuilt, event, at, converter)


def _tool_ended(record: StepRecord, result: ToolResult, at: datetime) -> None:
    record.ended_at = at
    if result.is_error:
        record.error = result.text
    else:
        record.result = result.text


async def _apply_fast_tool(rebuilt: _Rebuilt, marker: Any, at: datetime, converter: DataConverter) -> None:
    """A fast tool runs as a local activity: history holds one marker with its result and none of its request,
    so the call is found by the id its result names."""
    if marker.marker_name != LOCAL_ACTIVITY_MARKER or "result" not in marker.details:
        return
    try:
        data = json.loads(marker.details["data"].payloads[0].data)
    except (KeyError, IndexError, ValueError):
        return
    if not isinstance(data, dict) or names.RUN_TOOL_ACTIVITY not in data.values():
        return
    [result] = await converter.decode(list(marker.details["result"].payloads), [ToolResult])
    known = rebuilt.calls.get(result.call_id)
    if known is not None:
        rebuilt.decided.add(result.call_id)
        _tool_ended(known[0], result, at)


LOCAL_ACTIVITY_MARKER = "core_local_activity"
"""The marker the SDK records for a local activity: its metadata as JSON under `data`, its result under `result`."""

_ACTIVITY_ENDINGS = {
    "activity_task_failed_event_attributes": "failed",
    "activity_task_timed_out_event_attributes": "timed out",
    "activity_task_canceled_event_attributes": "cancelled",
}


async def _apply_message(rebuilt: _Rebuilt, event: HistoryEvent, at: datetime, converter: DataConverter) -> None:
    """Messages a session received and decisions on waiting calls.

    A signal is whatever its sender sent (another SDK, the `temporal` CLI): one the workflow could not use (not
    one JSON string) is a note, as the workflow notes it, not a message."""
    if event.HasField("workflow_execution_signaled_event_attributes"):
        attributes = event.workflow_execution_signaled_event_attributes
        payloads = list(attributes.input.payloads)
        if attributes.signal_name == "message":
            text = await _decoded(converter, payloads, str) if len(payloads) == 1 else None
            if isinstance(text, str) and not isinstance(text, Undecodable) and text.strip():
                rebuilt.steps.append(StepRecord(step=0, role="user", content=text, started_at=at, ended_at=at))
            else:
                came = f"{len(payloads)} arguments" if len(payloads) != 1 else text or "an empty message"
                rebuilt.note(f"message signal ignored: it takes one JSON string; it got {came}", at)
    elif event.HasField("workflow_execution_update_accepted_event_attributes"):
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        payloads = list(request.input.args.payloads)
        if request.input.name == "send" and payloads:
            text = await _decoded(converter, payloads[:1], str)
            rebuilt.steps.append(StepRecord(step=0, role="user", content=str(text), started_at=at, ended_at=at))
        elif request.input.name in ("approve", "reject") and payloads:
            decision = await _decoded(converter, payloads[:1], ApprovalDecision)
            if isinstance(decision, ApprovalDecision):
                rebuilt.decided.add(decision.call_id)


async def _decoded(converter: DataConverter, payloads: list[Payload], kind: type[Any]) -> Any:
    """The value of one payload, or `undecodable(...)`'s placeholder saying why it cannot be read here."""
    try:
        [value] = await converter.decode(payloads, [kind])
    except Exception as err:  # invalid JSON, a lone surrogate, an encoding or key this process does not have
        return undecodable(err)
    return value


class Undecodable(str):
    """The placeholder of a value that cannot be decoded here, told apart from text that reads the same."""


def undecodable(err: BaseException) -> Undecodable:
    """The placeholder shown for a value that cannot be decoded: `<undecodable payload: REASON>`."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    # pydantic says the type first ("1 validation error for str") and the problem on the next line
    reason = (
        lines[1].strip() if len(lines) > 1 and "validation error" in lines[0] else (lines or [type(err).__name__])[0]
    )
    reason = reason.split(" [type=")[0].encode("unicode_escape", "backslashreplace").decode("ascii")
    return Undecodable(f"<undecodable payload: {reason[:200]}>")


def _pending(rebuilt: _Rebuilt, awaiting: bool | None) -> list[PendingApproval]:
    """Calls of the latest model turn that need approval, have not run and have no decision yet."""
    if not awaiting or rebuilt.last_turn is None:
        return []
    step, at, calls = rebuilt.last_turn
    timeout = timedelta(seconds=rebuilt.run_input.agent.approval_timeout_seconds)
    return [
        PendingApproval(
            call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            step=step,
            requested_at=at,
            expires_at=at + timeout,
        )
        for call in calls
        if call.name in rebuilt.tools_needing_approval
        and call.id not in rebuilt.decided
        and rebuilt.calls[call.id][0].ended_at is None
    ]


def _innermost(failure: Any) -> str:
    while failure.HasField("cause"):
        failure = failure.cause
    kind = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
    return f"{kind}: {failure.message}" if kind else failure.message
