"""The conversation is written at every other model call of a run's steps, and the model still reads every message.

A call whose request carries no earlier answer stores nothing: the workflow carries the request's new messages and
the answer into its next request, whose call stores them with its own answer. So one durable write serves two steps,
and an answer that ends a run is often never written, since no model call reads it again.

A session's answer is the exception (`ModelRequest.store_answer`): a reply without tool calls is stored by its own
call. Deferred, it would ride in the next turn's first request, so every other turn's message and answer entered
history twice more (issue 45: a session's history is to stay within 3x what was said); the next turn comes
later, so the write it would have shared with that call saves no waiting either. A reply with tool calls is still
deferred, so a turn's steps keep the saving.
"""

from __future__ import annotations

from flavors import Flavor, agent_for
from temporalio.testing import ActivityEnvironment

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.transcripts import MemoryBlobs, TranscriptStore
from stalwart.client.api import StalwartClient
from stalwart.client.chain import model_request_at
from stalwart.contracts.activities import AgentContext, ModelRequest
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import Message, TranscriptRef
from stalwart.contracts.tools import ToolSpec
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Reply


def _request(agent: AgentSpec, *messages: Message, may_defer: bool = True, store_answer: bool = False) -> ModelRequest:
    tools = [ToolSpec(name=name) for name in agent.tools]
    return ModelRequest(
        step=1,
        transcript=TranscriptRef(chain_id="a-chain"),
        new_messages=list(messages),
        context=AgentContext(agent=agent, tools=tools),
        may_defer=may_defer,
        store_answer=store_answer,
    )


def _segments(blobs: MemoryBlobs) -> list[str]:
    return [key for key in blobs.blobs if "/context-" not in key]


async def test_an_answer_is_not_written_when_the_workflow_carries_it_into_the_next_request():
    blobs = MemoryBlobs()
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="hello back")])
    request = _request(agent, Message(role="user", content="hello"))
    turn = await ActivityEnvironment().run(ModelActivities(TranscriptStore(blobs)).model_turn, request)
    assert (turn.text, turn.deferred, turn.recorded) == ("hello back", True, False)
    assert turn.transcript == request.transcript
    assert _segments(blobs) == []


async def test_an_answer_is_written_for_a_workflow_that_does_not_carry_it():
    blobs = MemoryBlobs()
    store = TranscriptStore(blobs)
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="hello back")])
    request = _request(agent, Message(role="user", content="hello"), may_defer=False)  # as older workflows ask
    turn = await ActivityEnvironment().run(ModelActivities(store).model_turn, request)
    assert turn.recorded and not turn.deferred and turn.transcript is not None
    assert [m.content for m in await store.read(turn.transcript)] == ["hello", "hello back"]


async def test_an_answer_with_tool_calls_waits_for_the_next_call_too():
    blobs = MemoryBlobs()
    call = ScriptedToolCall(name="echo", arguments={"text": "hi"})
    agent = AgentSpec(name="alone", tools=["echo"], scripted=[ScriptedReply(tool_calls=[call])])
    turn = await ActivityEnvironment().run(
        ModelActivities(TranscriptStore(blobs)).model_turn, _request(agent, Message(role="user", content="hello"))
    )
    assert [c.name for c in turn.tool_calls] == ["echo"]
    assert turn.deferred and _segments(blobs) == []


async def test_a_sessions_answer_is_written_by_its_own_call():
    blobs = MemoryBlobs()
    store = TranscriptStore(blobs)
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="hello back")])
    request = _request(agent, Message(role="user", content="hello"), store_answer=True)
    turn = await ActivityEnvironment().run(ModelActivities(store).model_turn, request)
    assert turn.recorded and not turn.deferred and turn.transcript is not None
    assert [m.content for m in await store.read(turn.transcript)] == ["hello", "hello back"]


async def test_a_sessions_reply_with_tool_calls_still_waits_for_the_next_call():
    blobs = MemoryBlobs()
    call = ScriptedToolCall(name="echo", arguments={"text": "hi"})
    agent = AgentSpec(name="alone", tools=["echo"], scripted=[ScriptedReply(tool_calls=[call])])
    request = _request(agent, Message(role="user", content="hello"), store_answer=True)
    turn = await ActivityEnvironment().run(ModelActivities(TranscriptStore(blobs)).model_turn, request)
    assert turn.deferred and _segments(blobs) == []


async def test_a_request_that_carries_a_deferred_answer_writes_it_whatever_its_own_answer():
    blobs = MemoryBlobs()
    store = TranscriptStore(blobs)
    agent = AgentSpec(name="alone", scripted=[ScriptedReply(text="second")])
    carried = [
        Message(role="user", content="hello"),
        Message(role="assistant", content="first"),
        Message(role="user", content="again"),
    ]
    turn = await ActivityEnvironment().run(ModelActivities(store).model_turn, _request(agent, *carried))
    assert turn.recorded and not turn.deferred and turn.transcript is not None
    stored = await store.read(turn.transcript)
    assert [m.content for m in stored] == ["hello", "first", "again", "second"]
    assert len(_segments(blobs)) == 1


async def test_each_tool_calling_turn_of_a_session_writes_one_segment_and_the_model_reads_every_message(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    turns = 3
    replies = []
    for n in range(turns):
        replies += [Reply(calls=(Call("echo", {"text": f"ping {n}"}),)), Reply(text=f"answer {n}")]
    script = wire.script(*replies)
    agent = agent_for(flavor, script, tools=["echo"])
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        session = await stalwart.start_session(agent)
        answers = [(await session.send(f"message {n}")).answer for n in range(turns)]
        histories = await session.histories()
        last = await model_request_at(time_skipping_env.client, histories, 2 * turns)
    assert answers == [f"answer {n}" for n in range(turns)]
    # One write per turn, by the call after the tool: the last call read those of the turns before its own.
    assert last.transcript.segments == turns - 1
    # The last call received, over HTTP, every earlier message in order: each answer and tool result included.
    received = flavor.texts_of(script.requests[-1].body)
    said = [text for _, text in received if text]
    expected = []
    for n in range(turns):
        expected += [f"message {n}"] + ([f"answer {n}"] if n < turns - 1 else [])
    assert [text for text in said if text.startswith(("message", "answer"))] == expected
    results = flavor.results_of(script.requests[-1].body)
    assert [content for _, content in results] == [f"ping {n}" for n in range(turns)]


async def test_a_run_writes_its_conversation_at_every_other_model_call(stalwart, worker_with):
    calls = [ScriptedToolCall(name="echo", arguments={"text": f"ping {n}"}) for n in range(4)]
    agent = AgentSpec(
        name="pinger",
        tools=["echo"],
        scripted=[*(ScriptedReply(tool_calls=[call]) for call in calls), ScriptedReply(text="done")],
    )
    async with worker_with():
        handle = await stalwart.start(agent, "ping four times")
        result = await handle.result()
        histories = await handle.histories()
        last = await model_request_at(stalwart.temporal, histories, 5)
        seen = await handle.model_input(5)
    assert result.answer == "done"
    assert last.transcript.segments == 2  # calls 2 and 4 wrote; 1, 3 and 5 (the answer) did not
    assert [m.role for m in seen.messages] == ["user", *["assistant", "tool"] * 4]
    assert [r.content for m in seen.messages for r in m.tool_results] == [f"ping {n}" for n in range(4)]
