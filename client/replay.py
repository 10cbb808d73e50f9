"""Record runs as history files and replay them against the code installed here: the pre-deploy gate.

A run still in flight when workers are upgraded is replayed by the new code; if the new
code would make different decisions, Temporal stops that run with a nondeterminism error.
Replaying recorded and live histories before a deploy finds that first.

Payloads too large for history are in external storage; an export copies the ones its
histories refer to into a `storage/` folder beside them, so a fixture replays anywhere.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.client import Client, WorkflowHistory
from temporalio.common import RawValue
from temporalio.converter import DataConverter
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer

from stalwart.activities.storage.config import StorageConfig, object_client
from stalwart.activities.storage.converter import stalwart_converter
from stalwart.activities.storage.encryption import KEY_FILE_VAR, KEYS_VAR, encryption_codec, is_encrypted
from stalwart.activities.storage.objects import ObjectNotFoundError
from stalwart.client.chain import chain_histories
from stalwart.client.queries import matching
from stalwart.contracts.errors import NotFound, UnusablePath, UsageError
from stalwart.contracts.failure_types import INVALID_RUN_INPUT
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.workflows import AgentWorkflow
from stalwart.workflows.arguments import decoded_run_input, start_input
from stalwart.workflows.failures import innermost_message

STORAGE_FOLDER = "storage"
LIVE_LIMIT = 1000
"""Runs `replay --query` replays by default, the newest first."""
YOUR_OWN_WORKFLOW = (
    "A workflow of yours that runs agents (stalwart.workflow.execute_agent) is recorded and replayed with the "
    "Temporal SDK: save `(await handle.fetch_history()).to_json()`, and replay it with "
    "`temporalio.worker.Replayer(workflows=[YourWorkflow], plugins=[StalwartPlugin()])` (docs/testing.md, "
    "'Your own workflows'); its agents' runs export as any Stalwart run"
)
"""What to do with a run of a user's own workflow, which export and replay refuse: they have no class for it."""
_REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()


@dataclass(frozen=True)
class ReplayOutcome:
    """One history replayed: `ok`, or the first place where the code here decides differently (`divergence`), or
    why it could not be replayed here at all (`unreadable`: its payloads cannot be decoded, which says nothing of
    the code)."""

    name: str
    run_id: str
    ok: bool
    divergence: str | None = None
    unreadable: str | None = None


class ExportError(NotFound):
    """A run that cannot be exported as it is asked: the message says why and what to do."""


class NotAStalwartRun(ExportError):
    """A run id given to export that names a workflow of another type: the message says how to find agent runs."""


def history_file_name(workflow_id: str, index: int, chain: str | None = None) -> str:
    """`{workflow id}.{nnn}.json`, one per run of the chain; slashes (sub-agent ids) become `__`.

    With `chain` (its first run's id), `{workflow id}.{chain}.{nnn}.json`: an older chain of a workflow id used
    again, whose files would otherwise overwrite the newer chain's."""
    name = re.sub(r"[^A-Za-z0-9._-]", "__", workflow_id)
    return f"{name}.{chain}.{index:03d}.json" if chain else f"{name}.{index:03d}.json"


async def export_run(
    client: Client,
    workflow_id: str,
    out_dir: str | Path,
    storage: StorageConfig | None = None,
    *,
    run_id: str | None = None,
) -> list[Path]:
    """Write every run of the chain as a history file in `out_dir`, with the stored payloads they name; the chain
    of run `run_id` of `workflow_id`, by default of its latest run.

    Nothing is written for a run that is not there, not a Stalwart run, or whose stored payloads are not where
    this process looks: replay would only refuse the files."""
    return await _export_chain(await chain_histories(client, workflow_id, run_id), workflow_id, out_dir, storage)


async def export_matching(
    client: Client, query: str, out_dir: str | Path, limit: int = LIVE_LIMIT, storage: StorageConfig | None = None
) -> AsyncIterator[Path]:
    """`export_run` for each chain of the runs a visibility query matches (the newest `limit`), each file as it is
    written. A workflow id used again names a chain of its own each time: the newest keeps the plain file names,
    and each older one's names carry its first run's id."""
    exported: set[str] = set()  # workflow ids
    async for workflow_id, histories in matching_chains(client, query, limit):
        chain = histories[0].run_id if workflow_id in exported else None
        exported.add(workflow_id)
        for path in await _export_chain(histories, workflow_id, out_dir, storage, chain):
            yield path


async def _export_chain(
    histories: list[WorkflowHistory],
    workflow_id: str,
    out_dir: str | Path,
    storage: StorageConfig | None,
    chain: str | None = None,
) -> list[Path]:
    workflow_type = histories[0].events[0].workflow_execution_started_event_attributes.workflow_type.name
    if workflow_type != WORKFLOW_TYPE:
        raise NotAStalwartRun(
            f"{workflow_id} is a run of workflow type {workflow_type!r}, not a Stalwart run ({WORKFLOW_TYPE}): "
            f"`stalwart runs` lists the runs of this namespace. {YOUR_OWN_WORKFLOW}"
        )
    out_dir = Path(out_dir)
    objects = object_client(storage or StorageConfig.from_env())
    stored: dict[Path, bytes] = {}
    for history in histories:
        for bucket, key in stored_references(history):
            target = out_dir / STORAGE_FOLDER / bucket / key
            if target in stored or target.exists():
                continue
            try:
                stored[target] = await objects.get_object(bucket=bucket, key=key)
            except ObjectNotFoundError as err:
                raise ExportError(
                    f"{workflow_id}'s history names payloads stored outside it, and they are not where this process "
                    f"looks ({err}): set STALWART_STORAGE (and STALWART_S3_ENDPOINT_URL) as the workers have it"
                ) from None
    try:
        return _write_chain(histories, workflow_id, out_dir, stored, chain)
    except OSError as err:  # the folder named (-o) cannot be made or written
        raise UnusablePath.of(err) from err


def _write_chain(
    histories: list[WorkflowHistory], workflow_id: str, out_dir: Path, stored: dict[Path, bytes], chain: str | None
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    for target, data in stored.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    written = []
    for index, history in enumerate(histories):
        path = out_dir / history_file_name(workflow_id, index, chain)
        # The workflow id is kept with the events: sub-agents' ids derive from it, so replay needs it.
        record = {"workflowId": history.workflow_id, "history": json.loads(history.to_json())}
        path.write_text(json.dumps(record) + "\n")
        written.append(path)
    return written


def stored_references(history: WorkflowHistory) -> Iterator[tuple[str, str]]:
    """(bucket, key) of every externally stored payload the history refers to."""
    for event in history.events:
        for payload in _payloads(event):
            if payload.metadata.get("messageType") != _REFERENCE_TYPE:
                continue
            reference = json_format.Parse(payload.data, ExternalStorageReference())
            claim = dict(reference.claim_data)
            if "bucket" in claim and "key" in claim:
                yield claim["bucket"], claim["key"]


def _payloads(message: ProtoMessage) -> Iterator[Payload]:
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if isinstance(value, ProtoMessage):
            items: Iterable[object] = [value]
        elif field.message_type.GetOptions().map_entry:
            items = value.values()
        else:  # a repeated message field
            items = value
        for item in items:
            if isinstance(item, Payload):
                yield item
            elif isinstance(item, ProtoMessage):
                yield from _payloads(item)


def history_files(paths: Iterable[Path]) -> list[Path]:
    """The history files named, with those inside named folders (not their `storage/` folders)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(p for p in sorted(path.rglob("*.json")) if STORAGE_FOLDER not in p.relative_to(path).parts)
        else:
            found.append(path)
    return found


class HistoryFileError(UsageError, ValueError):
    """A file given to replay that is not a readable history; the message names the file and what to do."""


def read_history(path: Path) -> WorkflowHistory:
    """A history file as `export_run` writes it, or as `temporal workflow show -o json` does (then the workflow
    id is its started event's, else the file name's: sub-agents' ids derive from it, so replay needs the real one)."""
    fix = "give a file written by `stalwart history export` or `temporal workflow show -o json`"
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as err:
        if isinstance(err, FileNotFoundError) and not path.suffix and len(path.parts) == 1:  # a run id, it seems
            fix += f"; to replay the live run of that id: stalwart replay --query 'WorkflowId=\"{path}\"'"
        raise HistoryFileError(f"{path}: cannot be read ({err.strerror or err}); {fix}") from None
    except UnicodeDecodeError:
        raise HistoryFileError(f"{path}: not UTF-8 text, so not a history file; {fix}") from None
    except RecursionError:
        raise HistoryFileError(f"{path}: nests too deeply to be a history file; {fix}") from None
    except ValueError as err:
        raise HistoryFileError(f"{path}: not JSON ({err}); {fix}") from None
    try:
        if isinstance(record, dict) and "workflowId" in record:
            history = WorkflowHistory.from_json(record["workflowId"], record["history"])
        else:
            history = WorkflowHistory.from_json(path.name.split(".")[0], record)
    except Exception as err:  # protobuf's ParseError, a KeyError or TypeError from a JSON of another shape
        raise HistoryFileError(
            f"{path}: JSON, but not a workflow history ({type(err).__name__}: {err}); {fix}"
        ) from None
    if not history.events or not history.events[0].HasField("workflow_execution_started_event_attributes"):
        # The replayer waits forever on a history that does not start a workflow.
        raise HistoryFileError(f"{path}: not a workflow history: its first event does not start a workflow run; {fix}")
    broken = _not_as_recorded(history.events)
    if broken is not None:
        raise HistoryFileError(f"{path}: not a workflow history as Temporal records one: {broken}; {fix}, unedited")
    started = history.events[0].workflow_execution_started_event_attributes
    if not (isinstance(record, dict) and "workflowId" in record) and started.workflow_id:
        history = WorkflowHistory(started.workflow_id, history.events)
    workflow_type = started.workflow_type.name
    if workflow_type != WORKFLOW_TYPE:
        # The replayer has no class for it: a run that had only started replayed `ok`, a longer one "diverged".
        raise HistoryFileError(
            f"{path}: a history of workflow type {workflow_type!r}, not a Stalwart run ({WORKFLOW_TYPE}): replay "
            f"checks Stalwart's runs only; leave it out of the folder. {YOUR_OWN_WORKFLOW}"
        )
    return history


# What may follow a workflow task's start: the task's end, or the run's.
_ENDS_A_TASK = frozenset(
    EventType.Value(f"EVENT_TYPE_{name}")
    for name in (
        "WORKFLOW_TASK_COMPLETED",
        "WORKFLOW_TASK_FAILED",
        "WORKFLOW_TASK_TIMED_OUT",
        "WORKFLOW_EXECUTION_TERMINATED",
        "WORKFLOW_EXECUTION_TIMED_OUT",
    )
)


def _not_as_recorded(events: Sequence[HistoryEvent]) -> str | None:
    """What in these events no server records, of what the SDK core's replayer checks (its `HistoryInfo`).

    The core panics on each of them instead of failing the replay, and the replayer then waits forever for the
    answer of a worker that died (SIGTERM too): events out of order, repeated or missing (an edited file), a
    workflow task's start followed by anything but its end, a started event without its task queue."""
    for number, event in enumerate(events, 1):
        if event.event_id != number:
            actual = f"event {event.event_id}" if event.event_id else "an event without a number"
            return (
                f"its events must be numbered 1, 2, 3... in order, and in place of event {number} is {actual} "
                f"({_event_type(event)})"
            )
    for event, following in zip(events, events[1:], strict=False):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED and following.event_type not in _ENDS_A_TASK:
            return (
                f"event {event.event_id} starts a workflow task and event {following.event_id} "
                f"({_event_type(following)}) does not end it"
            )
    if not events[0].workflow_execution_started_event_attributes.HasField("task_queue"):
        return "its first event does not name the run's task queue"
    return None


async def replay_files(paths: Iterable[Path], workflows: Sequence[type] = (AgentWorkflow,)) -> list[ReplayOutcome]:
    """Replay history files with Stalwart's workflow and converter; stored payloads come from beside them.

    `workflows` is for a test that proves a changed workflow is caught.
    """
    return [outcome async for outcome in replaying_files(paths, workflows)]


async def replaying_files(
    paths: Iterable[Path], workflows: Sequence[type] = (AgentWorkflow,)
) -> AsyncIterator[ReplayOutcome]:
    """`replay_files`, each outcome as soon as it is known: `stalwart replay` prints them as it goes."""
    for path in history_files(paths):
        history = read_history(path)
        beside = path.parent / STORAGE_FOLDER
        # Resolved: a folder named relative to here (`stalwart replay histories/`) is still the same folder.
        storage = StorageConfig(local_root=beside.resolve()) if beside.is_dir() else None
        converter = stalwart_converter(storage=storage)
        refused = await _input_it_did_not_run_on(history, converter)
        if refused is not None:
            raise HistoryFileError(
                f"{path}: the recorded run went on from an input that is not a run input: the file was edited or "
                "damaged (give the file `stalwart history export` wrote), or the code here refuses an input the "
                f"recording code took (and would fail the runs in flight that took it the same way); {refused}"
            )
        yield await _replay(history, path.name, converter, workflows)


async def _input_it_did_not_run_on(history: WorkflowHistory, converter: DataConverter) -> str | None:
    """Why the start input is no run input, when the run recorded went on anyway.

    The workflow fails a run whose input is not one at its first task (`arguments.run_input`, asked here too); a
    history that goes on from such an input was replayed as a divergence, blaming the code for the file's input.
    A run that did fail for its input replays as it was, and one whose payloads cannot be decoded here is for
    `_unreadable` to report."""
    started = history.events[0].workflow_execution_started_event_attributes
    went_on = any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in history.events) and not any(
        e.workflow_execution_failed_event_attributes.failure.application_failure_info.type == INVALID_RUN_INPUT
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
    )
    if not went_on:
        return None
    payloads = list(started.input.payloads)
    try:
        inputs = await converter.decode(payloads, [RawValue] * len(payloads))
        _, reason = decoded_run_input(start_input(inputs), converter.payload_converter)
    except Exception:  # a missing key or stored payload: `_unreadable` says which
        return None
    return reason


async def replay_live(client: Client, query: str, limit: int = LIVE_LIMIT) -> list[ReplayOutcome]:
    """Replay the runs a visibility query matches (the newest `limit`), every run of each chain once, straight
    from the server.

    The query matches runs, and a chain that continued as new has several: each names the whole chain. A workflow
    id used again after its run closed names a chain of its own each time: each chain the query matches is
    replayed, not only the id's latest.
    """
    return [outcome async for outcome in replaying_live(client, query, limit)]


async def replaying_live(client: Client, query: str, limit: int = LIVE_LIMIT) -> AsyncIterator[ReplayOutcome]:
    """`replay_live`, each outcome as soon as it is known: replaying a thousand runs takes minutes."""
    converter = stalwart_converter()  # one for every run: their payloads are read where the workers keep them
    async for workflow_id, histories in matching_chains(client, query, limit):
        for history in histories:
            yield await _replay(history, workflow_id, converter, (AgentWorkflow,))


async def matching_chains(client: Client, query: str, limit: int) -> AsyncIterator[tuple[str, list[WorkflowHistory]]]:
    """The workflow id and the histories of each chain of the runs `query` matches (the newest `limit` runs), each
    chain once: the query may match several runs of one chain, and each names the whole chain."""
    seen: set[str] = set()  # run ids
    async for execution in matching(client, query, limit):
        if execution.run_id in seen:
            continue
        histories = await chain_histories(client, execution.id, execution.run_id)
        seen.update(history.run_id for history in histories)
        yield execution.id, histories


async def _replay(
    history: WorkflowHistory, name: str, converter: DataConverter, workflows: Sequence[type]
) -> ReplayOutcome:
    run_id = history.run_id or ""
    unreadable = await _unreadable(history, converter)
    if unreadable is not None:
        return ReplayOutcome(name, run_id, ok=False, unreadable=unreadable)
    replayer = Replayer(workflows=list(workflows), data_converter=converter, runtime=_quiet_runtime())
    failure = await _replay_failure(replayer, history)
    if failure is None:
        return ReplayOutcome(name, run_id, ok=True)
    said = _divergence(failure)
    try:
        event = await _divergent_event(replayer, history, said)
    except Exception:  # finding the place is a courtesy: the divergence is reported with or without it
        event = None
    where = f"event {event.event_id} ({_event_type(event)}): " if event is not None else ""
    return ReplayOutcome(name, run_id, ok=False, divergence=where + said)


async def _replay_failure(replayer: Replayer, history: WorkflowHistory) -> Exception | None:
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


# Events a workflow task's commands write into history (and the updates it accepts or completes): what the code
# decided, the events a divergence is found among.
_DECIDED = frozenset(
    EventType.Value(f"EVENT_TYPE_{name}")
    for name in (
        "ACTIVITY_TASK_SCHEDULED",
        "ACTIVITY_TASK_CANCEL_REQUESTED",
        "TIMER_STARTED",
        "TIMER_CANCELED",
        "MARKER_RECORDED",
        "START_CHILD_WORKFLOW_EXECUTION_INITIATED",
        "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED",
        "REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED",
        "UPSERT_WORKFLOW_SEARCH_ATTRIBUTES",
        "WORKFLOW_PROPERTIES_MODIFIED",
        "NEXUS_OPERATION_SCHEDULED",
        "NEXUS_OPERATION_CANCEL_REQUESTED",
        "WORKFLOW_EXECUTION_UPDATE_ACCEPTED",
        "WORKFLOW_EXECUTION_UPDATE_REJECTED",
        "WORKFLOW_EXECUTION_UPDATE_COMPLETED",
        "WORKFLOW_EXECUTION_COMPLETED",
        "WORKFLOW_EXECUTION_FAILED",
        "WORKFLOW_EXECUTION_CANCELED",
        "WORKFLOW_EXECUTION_CONTINUED_AS_NEW",
    )
)


async def _divergent_event(replayer: Replayer, history: WorkflowHistory, said: str) -> HistoryEvent | None:
    """The first event where the code here decides differently from history.

    The SDK core names it in some messages (`HistoryEvent(id: 5, ...)`), not in others ("Activity type of scheduled
    event 'a' does not match ... 'b'"). Then the workflow task is found by replaying ever shorter histories (the
    first whose replay fails ends with that task's decisions), and among the events it decided, the first that
    holds a name the message quotes, else its first.
    """
    by_id = {event.event_id: event for event in history.events}
    named = re.search(r"HistoryEvent\(id: (\d+)", said)
    if named and int(named.group(1)) in by_id:
        return by_id[int(named.group(1))]
    events = list(history.events)
    completed = [i for i, e in enumerate(events) if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    if not completed:
        return None

    def decided(task: int) -> list[HistoryEvent]:
        return [
            e for e in events[completed[task] + 1 : _end_of_task(events, completed[task])] if e.event_type in _DECIDED
        ]

    def through(task: int) -> WorkflowHistory:
        return WorkflowHistory(history.workflow_id, events[: _end_of_task(events, completed[task])])

    low, high = 0, len(completed) - 1  # the first task whose replay fails: the last one does, as the whole did
    while low < high:
        middle = (low + high) // 2
        if await _replay_failure(replayer, through(middle)) is not None:
            high = middle
        else:
            low = middle + 1
    candidates = decided(low)
    quoted = re.findall(r"'([^']+)'", said)
    for event in candidates:
        text = str(event)
        if any(name in text for name in quoted):
            return event
    return candidates[0] if candidates else events[completed[low]]


def _end_of_task(events: list[HistoryEvent], completed: int) -> int:
    """The index of the next workflow task after the one completed at index `completed` (or the end): the events
    between are what that task decided and what the world answered before the next."""
    for i in range(completed + 1, len(events)):
        if events[i].event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            return i
    return len(events)


def _event_type(event: HistoryEvent) -> str:
    """`ActivityTaskScheduled` for EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, as the Web UI and `temporal` name it."""
    name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
    return "".join(word.title() for word in name.split("_"))


async def _unreadable(history: WorkflowHistory, converter: DataConverter) -> str | None:
    """Why this history's payloads cannot be decoded here, if they cannot.

    Replayed anyway, the workflow would fail on its input (or a result) and make different decisions than it
    recorded: a nondeterminism error that blames the code for a missing key or a missing stored payload.
    """
    keys = encryption_codec(converter.payload_codec) is not None
    for event in history.events:
        payloads = list(_payloads(event))
        if not keys and any(is_encrypted(payload) for payload in payloads):
            return (
                f"event {event.event_id} holds encrypted payloads and no encryption key is set here: give replay "
                f"the workers' keys ({KEYS_VAR} or {KEY_FILE_VAR})"
            )
        try:
            # Fetched from storage and opened by the codec only: what a client sent may be any bytes (invalid JSON,
            # a lone surrogate), which the workflow takes raw and notes, so only a missing key or stored payload
            # makes a history unreadable here.
            await converter.decode(payloads, [RawValue] * len(payloads))
        except Exception as err:
            return (
                f"a payload of event {event.event_id} cannot be decoded here ({innermost_message(err)}): replay "
                f"needs the payloads the workers stored (the `{STORAGE_FOLDER}/` folder an export writes beside its "
                f"files, or STALWART_STORAGE) and their encryption keys ({KEYS_VAR})"
            )
    return None


def _divergence(failure: Exception) -> str:
    """The SDK core's message of a replay failure, without the Rust debug text around it."""
    text = str(failure)
    found = re.search(r'message: "((?:[^"\\]|\\.)*)"', text)
    return found.group(1) if found else text


@functools.cache
def _quiet_runtime() -> Runtime:
    """A runtime whose core logs only errors: a divergence is reported once, by `ReplayOutcome`, and the core's
    own warning of the same failed workflow task would only repeat it."""
    return Runtime(
        telemetry=TelemetryConfig(
            logging=LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
        )
    )
