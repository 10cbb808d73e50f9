"""A model call you can audit and test alone: its input is in history, the conversation in storage."""

from __future__ import annotations

from flavors import Flavor, agent_for, start_run
from temporalio.testing import ActivityEnvironment

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.transcripts import MemoryBlobs, TranscriptStore
from stalwart.client.api import StalwartClient
from stalwart.contracts.activities import AgentContext, ModelRequest
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.contracts.messages import Message, TranscriptRef
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Reply


async def test_the_model_activity_runs_alone_from_a_plain_input():
    models = ModelActivities(TranscriptStore(MemoryBlobs()))
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="hello back")])
    request = ModelRequest(
        step=1,
        transcript=TranscriptRef(chain_id="a-chain"),
        new_messages=[Message(role="user", content="hello")],
        context=AgentContext(agent=agent, tools=[]),
    )
    turn = await ActivityEnvironment().run(models.model_turn, request)
    assert turn.text == "hello back"
    assert turn.transcript is not None and (turn.transcript.segments, turn.transcript.messages) == (1, 2)
    assert turn.context_ref is not None


async def test_the_model_activity_stores_its_answer_so_the_next_request_carries_only_what_is_new():
    store = TranscriptStore(MemoryBlobs())
    models = ModelActivities(store)
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="hello back")])
    request = ModelRequest(
        step=1,
        transcript=TranscriptRef(chain_id="a-chain"),
        new_messages=[Message(role="user", content="hello")],
        context=AgentContext(agent=agent, tools=[]),
    )
    turn = await ActivityEnvironment().run(models.model_turn, request)
    assert turn.recorded and turn.transcript is not None
    stored = await store.read(turn.transcript)
    assert [(m.role, m.content) for m in stored] == [("user", "hello"), ("assistant", "hello back")]


async def test_a_later_call_names_the_agent_and_the_conversation_by_reference_only():
    models = ModelActivities(TranscriptStore(MemoryBlobs()))
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="one"), ScriptedReply(text="two")])
    env = ActivityEnvironment()
    first = await env.run(
        models.model_turn,
        ModelRequest(
            step=1,
            transcript=TranscriptRef(chain_id="c"),
            new_messages=[Message(role="user", content="hi")],
            context=AgentContext(agent=agent, tools=[]),
        ),
    )
    assert first.transcript is not None
    second = await env.run(
        models.model_turn,
        ModelRequest(
            step=2,
            transcript=first.transcript,
            new_messages=[Message(role="user", content="again")],
            context_ref=first.context_ref,
        ),
    )
    assert second.text == "two"
    assert second.transcript is not None and second.transcript.messages == 4


async def test_the_prompt_of_a_recorded_step_rebuilt_from_history_and_storage_is_what_the_model_server_received(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(
        Reply(text="Let me compute.", calls=(Call("calculator", {"expression": "6*7"}),)), Reply(text="42")
    )
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script), "What is 6*7?")
        await handle.result()
        rebuilt = await StalwartClient(time_skipping_env.client, task_queue=task_queue).get(handle.id).model_input(2)
    received = script.requests[1].body
    [tool_message] = [m for m in rebuilt.messages if m.role == "tool"]
    assert flavor.results_of(received) == [(r.call_id, r.for_model()) for r in tool_message.tool_results]
    texts = [text for role, text in flavor.texts_of(received) if role == "user"]
    assert texts == [m.content for m in rebuilt.messages if m.role == "user"] == ["What is 6*7?"]
    assert [m.role for m in rebuilt.messages] == ["user", "assistant", "tool"]
