"""Messages that came by a session's `send` update, read back from history instead of travelling twice through it.

A message sent with `send` is in the workflow's history already: the update's argument, in its accepted event. The
model call's input names the update (`ModelRequest.sent`) instead of repeating the text, and the model activity reads
it from there. The update was accepted shortly before the call was scheduled, so the run's history is read from its
end (the `GetWorkflowExecutionHistoryReverse` RPC, one short page as a rule); a server without that RPC (the
time-skipping test server) is read from the start. The payload is decoded by the worker client's data converter, so
an encrypted or externally stored message reads as it was sent.

Most calls need no read at all: a worker's workflows hand the activities of their process the text of each `send`
they accept (`AcceptedMessages`, a workflow interceptor), and the call, scheduled in the same workflow task, usually
runs in that process. Those texts, and the ones read from history, are kept until a call stores them with the
conversation (the call after a deferred one names the same message again), within a bound. A call in another process,
or after a restart, reads history. `stalwart.client.chain` rebuilds a call's input from a history it already holds
(`texts_in`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import HandleUpdateInput, Interceptor, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

from stalwart.activities.transcripts import TranscriptError
from stalwart.contracts.messages import Message
from stalwart.contracts.names import WORKFLOW_TYPE

FIRST_PAGE = 4
"""Batches of events (one a workflow task, as a rule) in the first page read from the end of history: the update of a
message read at a turn's first call was accepted in the batch that scheduled the call. Four batches cost about what
one does (1.8 ms against 3.3 for 32 on the dev server, busy)."""
NEXT_PAGES = 32
CACHED_TEXT_CHARS = 32 * 1024 * 1024
"""How many characters of messages a worker keeps in memory, newest first."""
_ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED


class SentMessageMissing(TranscriptError):
    """The update a model call names is not in its run's history; reading again cannot help."""


async def texts_in(events: Iterable[HistoryEvent], update_ids: set[str], converter: DataConverter) -> dict[str, str]:
    """The messages of the `send` updates `update_ids` that `events` accepted, by update id."""
    found: dict[str, str] = {}
    for event in events:
        if event.event_type != _ACCEPTED:
            continue
        accepted = event.workflow_execution_update_accepted_event_attributes.accepted_request
        update_id = accepted.meta.update_id
        if update_id in update_ids and update_id not in found:
            [text] = await converter.decode(list(accepted.input.args.payloads), [str])
            found[update_id] = str(text)
    return found


def filled(messages: list[Message], sent: dict[int, str], texts: dict[str, str]) -> list[Message]:
    """`messages` with the text of each one `sent` names put back."""
    return [
        message.model_copy(update={"content": texts[sent[index]]}) if index in sent else message
        for index, message in enumerate(messages)
    ]


class _Texts:
    """Texts of messages by (run id, update id), the newest `limit` characters of them."""

    def __init__(self, limit: int = CACHED_TEXT_CHARS) -> None:
        self._texts: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._chars = 0
        self._limit = limit

    def get(self, run_id: str, update_id: str) -> str | None:
        text = self._texts.get((run_id, update_id))
        if text is not None:
            self._texts.move_to_end((run_id, update_id))
        return text

    def drop(self, run_id: str, update_id: str) -> None:
        dropped = self._texts.pop((run_id, update_id), None)
        self._chars -= len(dropped) if dropped is not None else 0

    def put(self, run_id: str, update_id: str, text: str) -> None:
        if len(text) > self._limit:
            return
        previous = self._texts.pop((run_id, update_id), None)
        self._chars += len(text) - (len(previous) if previous is not None else 0)
        self._texts[(run_id, update_id)] = text
        while self._chars > self._limit:
            _, dropped = self._texts.popitem(last=False)
            self._chars -= len(dropped)


_ACCEPTED_HERE = _Texts()
"""What the workflows of this process accepted by `send`, and what its model activities read from history."""


class AcceptedMessages(Interceptor):
    """Hands the model activities of this process the text of each `send` its agent workflows accept.

    A cache, never the record: the activity reads history for a message it does not find here. The text is the
    update's argument as the workflow decoded it, the same bytes history holds."""

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return _KeepAccepted


class _KeepAccepted(WorkflowInboundInterceptor):
    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        # Kept before the handler runs: the model call that reads it runs while the handler waits for the turn to end.
        # A handler that refuses the message (which its validator let through) takes it back. Not while replaying: the
        # calls of those turns are over, and a session replayed after a restart would fill this with every message.
        replaying = workflow.unsafe.is_replaying()
        kept: str | None = None  # the run whose text is kept
        if input.update == "send" and workflow.info().workflow_type == WORKFLOW_TYPE and not replaying:
            text = _text_of(input.args)
            if text is not None:
                kept = workflow.info().run_id
                _ACCEPTED_HERE.put(kept, input.id, text)
        try:
            return await super().handle_update_handler(input)
        except Exception:
            if kept is not None:
                _ACCEPTED_HERE.drop(kept, input.id)
            raise


def _text_of(args: Sequence[Any]) -> str | None:
    """The text a dynamic handler's arguments (the update's name, then its raw values) carry, if one string."""
    if len(args) != 2 or not isinstance(args[1], (list, tuple)) or len(args[1]) != 1:
        return None
    [raw] = args[1]
    if not isinstance(raw, RawValue):
        return None
    try:
        text = workflow.payload_converter().from_payload(raw.payload, str)
    except Exception:  # not a string: the validator refuses it, and no model call names it
        return None
    return text if isinstance(text, str) else None


class SentMessages:
    """Reads the messages a model call names: handed over by this process's workflows, or from its run's history."""

    def __init__(self, texts: _Texts | None = None) -> None:
        self._texts = texts if texts is not None else _ACCEPTED_HERE
        self._reverse = True  # until the server says it cannot read history from its end

    async def filled(
        self,
        client: Client,
        namespace: str,
        workflow_id: str,
        run_id: str,
        messages: list[Message],
        sent: dict[int, str],
    ) -> list[Message]:
        """`messages` (a model call's new messages) with the text of each message `sent` names read back."""
        if not sent:
            return messages
        texts = {
            update_id: text for update_id in sent.values() if (text := self._texts.get(run_id, update_id)) is not None
        }
        wanted = set(sent.values()) - set(texts)
        if wanted:
            read = await self._read(client, namespace, workflow_id, run_id, wanted)
            missing = wanted - set(read)
            if missing:
                raise SentMessageMissing(
                    f"the message of update {sorted(missing)[0]} is not in the history of run {run_id} of "
                    f"{workflow_id}, which the model call's input names: was the history reset or the input edited?"
                )
            for update_id, text in read.items():
                self._texts.put(run_id, update_id, text)
            texts.update(read)
        return filled(messages, sent, texts)

    def forget(self, run_id: str, update_ids: Iterable[str]) -> None:
        """The messages of `update_ids` are stored with the conversation now: no later call names them, and an idle
        session keeps no copy here."""
        for update_id in update_ids:
            self._texts.drop(run_id, update_id)

    async def _read(
        self, client: Client, namespace: str, workflow_id: str, run_id: str, wanted: set[str]
    ) -> dict[str, str]:
        if self._reverse:
            try:
                return await self._read_from_the_end(client, namespace, workflow_id, run_id, wanted)
            except RPCError as err:
                if err.status != RPCStatusCode.UNIMPLEMENTED:
                    raise
                self._reverse = False
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        found: dict[str, str] = {}
        async for event in handle.fetch_history_events():
            found.update(await texts_in([event], wanted - set(found), client.data_converter))
            if len(found) == len(wanted):
                break
        return found

    async def _read_from_the_end(
        self, client: Client, namespace: str, workflow_id: str, run_id: str, wanted: set[str]
    ) -> dict[str, str]:
        found: dict[str, str] = {}
        token = b""
        size = FIRST_PAGE
        while True:
            response = await client.workflow_service.get_workflow_execution_history_reverse(
                GetWorkflowExecutionHistoryReverseRequest(
                    namespace=namespace,
                    execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
                    maximum_page_size=size,
                    next_page_token=token,
                )
            )
            found.update(await texts_in(response.history.events, wanted - set(found), client.data_converter))
            token, size = response.next_page_token, NEXT_PAGES
            if len(found) == len(wanted) or not token:
                return found
