"""What a worker keeps in memory of the messages that came by a session's `send` (`activities/sent_messages.py`).

The texts are a cache for the model call that names them: once a call has stored them with the conversation no call
names them again, and a message the session refused is named by no call at all. Neither stays in the process.
"""

from __future__ import annotations

from unittest.mock import Mock

from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.sent_messages import SentMessages, _Texts
from stalwart.activities.transcripts import MemoryBlobs, TranscriptStore
from stalwart.contracts.activities import AgentContext, ModelRequest
from stalwart.contracts.agent import AgentSpec, ContextSettings
from stalwart.contracts.messages import Message, TranscriptRef


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
