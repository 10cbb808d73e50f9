"""A run as its continue-as-new chain of Temporal runs, and what its model was sent at any step.

A long run or a session continues as new to keep each history small; a person still
thinks of it as one run. These read the whole chain from the server, oldest run first.
"""

from __future__ import annotations

from temporalio.client import Client, WorkflowHistory

from stalwart.activities import sent_messages
from stalwart.activities.context_window import model_window, summary_context
from stalwart.activities.storage.config import ObjectStore
from stalwart.activities.transcripts import TranscriptStore
from stalwart.contracts.activities import ModelContext, ModelRequest
from stalwart.contracts.errors import NotFound
from stalwart.contracts.names import MODEL_ACTIVITY


class ModelCallNotFound(NotFound):
    """The chain's history holds no model call of the step asked for, or one that names no agent."""


async def chain_histories(client: Client, workflow_id: str, run_id: str | None = None) -> list[WorkflowHistory]:
    """The histories of every run of the chain that run `run_id` of `workflow_id` belongs to (by default, the chain
    of its latest run), oldest first.

    A workflow id is free again once its run has closed (a session started anew under the same id): each use of it
    is a chain of its own, and a run in the middle of a chain has runs after it as well as before.
    """
    fetch = client.get_workflow_handle
    chosen = await fetch(workflow_id, run_id=run_id).fetch_history()
    earlier: list[WorkflowHistory] = []
    first = chosen
    while previous := first.events[0].workflow_execution_started_event_attributes.continued_execution_run_id:
        first = await fetch(workflow_id, run_id=previous).fetch_history()
        earlier.append(first)
    later: list[WorkflowHistory] = []
    last = chosen
    while following := _continued_as(last):
        last = await fetch(workflow_id, run_id=following).fetch_history()
        later.append(last)
    return [*reversed(earlier), chosen, *later]


def _continued_as(history: WorkflowHistory) -> str | None:
    """The run `history`'s run continued as, if it closed so."""
    closed = history.events[-1]
    if not closed.HasField("workflow_execution_continued_as_new_event_attributes"):
        return None
    return closed.workflow_execution_continued_as_new_event_attributes.new_execution_run_id or None


async def model_request_at(client: Client, histories: list[WorkflowHistory], step: int) -> ModelRequest:
    """The input of the model activity of `step`, as history recorded it (of its summary call, for a step that
    summarised the conversation: the call before it only found that the conversation overflowed)."""
    found: ModelRequest | None = None
    for history in histories:
        for event in history.events:
            scheduled = event.activity_task_scheduled_event_attributes
            if event.HasField("activity_task_scheduled_event_attributes") and (
                scheduled.activity_type.name == MODEL_ACTIVITY
            ):
                [request] = await client.data_converter.decode(list(scheduled.input.payloads), [ModelRequest])
                if request.step == step and (found is None or request.summarize):
                    found = request
    if found is not None:
        return found
    raise ModelCallNotFound(f"no model call of step {step} in the history of {histories[-1].workflow_id}")


async def model_input_at(
    client: Client, histories: list[WorkflowHistory], step: int, transcripts: TranscriptStore | None = None
) -> ModelContext:
    """Exactly what the model activity of `step` sent to the provider, from history and storage.

    Needs the same `STALWART_STORAGE` as the workers: the conversation before the step is there.
    """
    request = await model_request_at(client, histories, step)
    transcripts = transcripts or TranscriptStore(ObjectStore.from_config())
    chain = request.transcript.chain_id
    static = request.context
    if static is None:
        if request.context_ref is None:
            raise ModelCallNotFound(f"the model call of step {step} names no agent")
        static = await transcripts.load_context(chain, request.context_ref)
    new = await transcripts.filled(chain, request.new_messages)
    if request.sent:  # messages that came by `send`: the call read them from the updates in history, as this does
        events = (event for history in histories for event in history.events)
        texts = await sent_messages.texts_in(events, set(request.sent.values()), client.data_converter)
        if missing := set(request.sent.values()) - set(texts):
            raise ModelCallNotFound(
                f"the model call of step {step} names the message of update {sorted(missing)[0]}, which the history "
                f"of {histories[-1].workflow_id} does not hold"
            )
        new = sent_messages.filled(new, request.sent, texts)
    messages = [*await transcripts.read(request.transcript), *new]
    if request.summarize:
        return summary_context(messages, static.agent, request.transcript, step)[0]
    return ModelContext(
        agent=static.agent,
        step=step,
        tools=static.tools,
        messages=model_window(messages, static.agent, request.transcript),
        tools_enabled=request.tools_enabled,
    )
