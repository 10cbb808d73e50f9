"""Issue 45, item 2: a session's message enters history once, and its answer no more than the model call and `send`
carry it.

The model call's input names a message that came by `send` (the update's id) and the activity reads it back from the
update's accepted event; a turn's answer is stored by the call that wrote it, not carried into the next turn's input;
and when the session continues as new, its step log goes to storage through a local activity, whose input history
does not record, without the texts the stored conversation holds.
"""

from __future__ import annotations

import base64
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from stalwart.activities import providers, sent_messages
from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.storage.encryption import KEY_FILE_VAR, KEYS_VAR
from stalwart.activities.transcripts import MemoryBlobs, TranscriptStore
from stalwart.client.api import StalwartClient
from stalwart.client.chain import model_request_at
from stalwart.client.connection import connect
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import AgentSpec, SessionSettings
from stalwart.contracts.messages import AssistantTurn, Message, TranscriptRef
from stalwart.contracts.names import ARCHIVE_STEPS_ACTIVITY
from stalwart.contracts.run import ArchivedStep, ArchiveStepsRequest
from stalwart.workers.worker import build_worker

TURNS = 3


def message(n: int) -> str:
    return f"message {n}: the quince is ripe, " + "q" * 200


def answer(n: int) -> str:
    return f"answer {n}: then pick the quince, " + "a" * 200


class Answering:
    """Answers model call N with `answer(N - 1)`: the answers are not in the agent spec, which history holds too."""

    heard: list[list[str]] = []
    """The texts of the messages each call was sent."""

    async def complete(self, context: ModelContext) -> AssistantTurn:
        Answering.heard.append([m.content for m in context.messages])
        return AssistantTurn(text=answer(context.step - 1), model="scripted")


@pytest.fixture(autouse=True)
def answering(monkeypatch: pytest.MonkeyPatch) -> None:
    Answering.heard = []
    monkeypatch.setitem(providers.PROVIDERS, "scripted", lambda agent, clients: Answering())


def talker(**fields: object) -> AgentSpec:
    return AgentSpec(name="talker", **fields)


def _bytes(histories) -> bytes:
    return b"".join(History(events=h.events).SerializeToString() for h in histories)


async def test_a_sent_message_is_in_history_once_and_its_answer_only_in_the_calls_and_the_sends_results(
    stalwart, worker_with
):
    async with worker_with():
        session = await stalwart.start_session(talker())
        answers = [(await session.send(message(n))).answer for n in range(TURNS)]
        histories = await session.histories()
    assert answers == [answer(n) for n in range(TURNS)]
    recorded = _bytes(histories)
    for n in range(TURNS):
        assert recorded.count(message(n).encode()) == 1, "the update's argument, and nowhere else"
        assert recorded.count(answer(n).encode()) == 2, "the model call's result and the send's result"


async def test_the_model_call_names_a_sent_message_and_reads_it_back(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(talker())
        for n in range(TURNS):
            await session.send(message(n))
        histories = await session.histories()
        request = await model_request_at(stalwart.temporal, histories, TURNS)
        seen = await session.model_input(TURNS)
    assert [m.content for m in request.new_messages] == [""] and list(request.sent) == [0]
    said = [(m.role, m.content) for m in seen.messages]
    assert said == [x for n in range(TURNS) for x in (("user", message(n)), ("assistant", answer(n)))][:-1]


async def test_a_worker_that_did_not_accept_the_message_reads_it_from_history(
    stalwart, worker_with, monkeypatch: pytest.MonkeyPatch
):
    """As a model call run by another process than its workflow's does (here read from the start of history: the
    test server has no reverse read)."""
    monkeypatch.setattr(sent_messages.AcceptedMessages, "workflow_interceptor_class", lambda self, input: None)
    monkeypatch.setattr(sent_messages, "_ACCEPTED_HERE", sent_messages._Texts())
    async with worker_with():
        session = await stalwart.start_session(talker())
        answers = [(await session.send(message(n))).answer for n in range(TURNS)]
    assert answers == [answer(n) for n in range(TURNS)]
    assert len(Answering.heard) == TURNS and all(heard[-1] == message(n) for n, heard in enumerate(Answering.heard)), (
        "the model read each message"
    )


async def test_a_sessions_answer_is_stored_by_its_own_call_not_carried_into_the_next_turn(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(talker())
        for n in range(TURNS):
            await session.send(message(n))
        histories = await session.histories()
        requests = [await model_request_at(stalwart.temporal, histories, step) for step in range(1, TURNS + 1)]
    assert [len(r.new_messages) for r in requests] == [1] * TURNS, "each call carries its own message alone"
    assert [r.transcript.messages for r in requests] == [2 * n for n in range(TURNS)], "each turn stored both"


async def test_a_message_signalled_is_still_sent_whole(stalwart, worker_with):
    """Looked for in every call: when the signal and the update come in one workflow task, the time-skipping server
    hands the workflow the update first now and then (the dev server keeps their order), so either call may carry it.
    """
    async with worker_with():
        session = await stalwart.start_session(talker())
        await session.post(message(0))
        await session.send(message(1))
        histories = await session.histories()
        steps = [s.step for s in (await session.state()).steps if s.role == "assistant"]
        requests = [await model_request_at(stalwart.temporal, histories, step) for step in steps]
    carrying = [(r, i) for r in requests for i, m in enumerate(r.new_messages) if m.content == message(0)]
    assert len(steps) in (1, 2) and len(carrying) == 1, "the signalled message went to the model once, with its text"
    request, index = carrying[0]
    assert index not in request.sent


async def test_continuing_as_new_archives_the_steps_by_a_local_activity_and_keeps_every_text(stalwart, worker_with):
    turns = 8
    agent = talker(session=SessionSettings(continue_as_new_events=40))
    async with worker_with():
        session = await stalwart.start_session(agent)
        for n in range(turns):
            await session.send(message(n))
        histories = await session.histories()  # before `close`, whose result holds the last run's steps
        final = await session.close()
    assert len(histories) > 1, "the session continued as new"
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for h in histories
        for e in h.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert ARCHIVE_STEPS_ACTIVITY not in scheduled, "the archive is a local activity: history keeps only its marker"
    said = [(s.role, s.content) for s in final.steps if s.role in ("user", "assistant")]
    assert said == [x for n in range(turns) for x in (("user", message(n)), ("assistant", answer(n)))]
    recorded = _bytes(histories)
    assert all(recorded.count(message(n).encode()) == 1 for n in range(turns))


class Listening:
    """A model that answers each call with how many characters the newest message it was sent has."""

    heard: list[str] = []

    async def complete(self, context: ModelContext) -> AssistantTurn:
        Listening.heard.append(context.messages[-1].content)
        return AssistantTurn(text=f"heard {len(context.messages[-1].content)} characters", model="scripted")


@pytest.mark.slow
async def test_on_the_dev_server_an_encrypted_externally_stored_message_is_read_back_from_history(
    dev_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The dev server reads history from its end (the reverse RPC, which the test server lacks); the message is over
    the external-storage threshold and sealed, so the activity decodes it with its worker's converter. The worker's
    workflows hand over nothing here, as in a call run by another process than its workflow's."""
    monkeypatch.setattr(sent_messages.AcceptedMessages, "workflow_interceptor_class", lambda self, input: None)
    monkeypatch.setattr(sent_messages, "_ACCEPTED_HERE", sent_messages._Texts())
    monkeypatch.setenv("STALWART_STORAGE", str(tmp_path / "storage"))
    monkeypatch.setenv("STALWART_STORAGE_THRESHOLD_BYTES", "2000")
    monkeypatch.setenv(KEYS_VAR, f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    monkeypatch.delenv(KEY_FILE_VAR, raising=False)
    monkeypatch.setitem(providers.PROVIDERS, "scripted", lambda agent, clients: Listening())
    Listening.heard = []
    long = "the quince is ripe " * 500
    client = await connect(dev_env.address, from_config=False)
    task_queue = f"once-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue=task_queue):
        session = await StalwartClient(client, task_queue=task_queue).start_session(AgentSpec(name="listener"))
        first = await session.send(long)
        second = await session.send("and the medlar?")
        request = await model_request_at(client, await session.histories(), 1)
        await session.close()
    assert Listening.heard == [long, "and the medlar?"]
    assert (first.answer, second.answer) == (f"heard {len(long)} characters", "heard 15 characters")
    assert [m.content for m in request.new_messages] == [""] and list(request.sent) == [0]
    assert b"quince" not in b"".join(p.read_bytes() for p in (tmp_path / "storage").rglob("*") if p.is_file())


async def test_the_archive_reads_the_texts_its_input_leaves_out_from_the_stored_conversation():
    store = TranscriptStore(MemoryBlobs())
    ref, _ = await store.append(
        TranscriptRef(chain_id="a-chain"),
        [Message(role="user", content=message(0)), Message(role="assistant", content=answer(0))],
    )
    now = datetime.now(UTC)
    steps = [
        ArchivedStep(step=0, role="user", started_at=now),
        ArchivedStep(step=1, role="assistant", started_at=now, final=True),
    ]
    named = {0: 0, 1: 1}  # each step's text is the message at that position
    request = ArchiveStepsRequest(chain_id="a-chain", index=0, steps=steps, transcript=ref, from_transcript=named)
    archive = await ActivityEnvironment().run(ModelActivities(store).archive_steps, request)
    assert [(s.role, s.content) for s in await store.load_steps([archive])] == [
        ("user", message(0)),
        ("assistant", answer(0)),
    ]


async def test_an_archive_naming_a_message_of_another_role_fails_for_good_instead_of_keeping_a_wrong_text():
    store = TranscriptStore(MemoryBlobs())
    ref, _ = await store.append(TranscriptRef(chain_id="a-chain"), [Message(role="user", content=message(0))])
    steps = [ArchivedStep(step=1, role="assistant", started_at=datetime.now(UTC))]
    request = ArchiveStepsRequest(chain_id="a-chain", index=0, steps=steps, transcript=ref, from_transcript={0: 0})
    with pytest.raises(ApplicationError, match="names message 0 of its stored conversation") as raised:
        await ActivityEnvironment().run(ModelActivities(store).archive_steps, request)
    assert raised.value.non_retryable
