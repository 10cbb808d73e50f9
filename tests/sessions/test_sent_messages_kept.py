"""What a worker keeps in memory of the messages that came by a session's `send` (`activities/sent_messages.py`).

The texts are a cache for the model call that names them: once a call has stored them with the conversation no call
names them again, and a message the session refused is named by no call at all. Neither stays in the process.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from unittest.mock import Mock

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Worker

from stalwart.activities import sent_messages
from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.sent_messages import AcceptedMessages, SentMessages, _Texts
from stalwart.activities.transcripts import MemoryBlobs, TranscriptStore
from stalwart.contracts.activities import AgentContext, ModelRequest
from stalwart.contracts.agent import AgentSpec, ContextSettings
from stalwart.contracts.messages import Message, TranscriptRef
from stalwart.contracts.names import WORKFLOW_TYPE


async def test_a_call_that_stores_the_messages_of_an_overflowing_conversation_forgets_their_texts():
    """Context strategy `summarize`: the call finds the conversation too long, stores its new messages and asks for a
    summary; the message it named is stored, so its text is not kept."""
    long = "the quince is ripe " * 300  # over 1,000 tokens at 4 characters a token
    texts = _Texts()
    environment = ActivityEnvironment(client=Mock(spec=Client))  # the text is held here: no history is read
    texts.put(environment.info.workflow_run_id or "", "update-1", long)
    activities = ModelActivities(TranscriptStore(MemoryBlobs()))
    activities._sent = SentMessages(texts)
    agent = AgentSpec(name="summing", context=ContextSettings(strategy="summarize", max_input_tokens=1_000))
    request = ModelRequest(
        step=2,
        transcript=TranscriptRef(chain_id="a-chain"),
        new_messages=[
            Message(role="user", content="first"),
            Message(role="assistant", content="noted"),
            Message(role="user", content=""),
        ],
        context=AgentContext(agent=agent, tools=[]),
        sent={2: "update-1"},
    )
    turn = await environment.run(activities.model_turn, request)
    assert turn.needs_summary and turn.transcript is not None and turn.transcript.messages == 3
    assert texts.get(environment.info.workflow_run_id or "", "update-1") is None


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class RefusingInItsHandler:
    """An agent workflow whose `send` handler refuses every message its validator (none) lets through."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.update(dynamic=True)
    async def _update(self, name: str, args: Sequence[RawValue]) -> str:
        raise ApplicationError(f"{name}: this session takes no message")


async def test_a_message_whose_send_handler_refuses_it_is_not_kept(
    time_skipping_env: WorkflowEnvironment, task_queue: str, monkeypatch: pytest.MonkeyPatch
):
    texts = _Texts()
    monkeypatch.setattr(sent_messages, "_ACCEPTED_HERE", texts)
    client = time_skipping_env.client
    async with Worker(
        client, task_queue=task_queue, workflows=[RefusingInItsHandler], interceptors=[AcceptedMessages()]
    ):
        handle = await client.start_workflow(
            WORKFLOW_TYPE, id=f"refusing-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update("send", "the quince is ripe", id="refused")
        await handle.terminate()
    assert texts.get(handle.result_run_id or "", "refused") is None
