"""Sessions: a run that stays open and answers each message as one turn of the agent loop."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from stalwart.activities.tools import tool
from stalwart.client.api import MessageRefused, SessionClosed, SessionHandle, StalwartClient
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SessionSettings
from stalwart.contracts.run import AgentResult
from stalwart.workflows.policies import COUNTERS_EVERY


def session_agent(*texts: str, **session: object) -> AgentSpec:
    return AgentSpec(
        name="chatter",
        tools=["echo"],
        scripted=[ScriptedReply(text=text) for text in texts],
        session=SessionSettings(**session),
    )


async def test_each_message_sent_by_update_is_answered_by_its_own_turn_in_order(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(session_agent("first answer", "second answer"))
        first = await session.send("hello")
        second = await session.send("and again")
        state = await session.state()
    assert (first.answer, first.stop_reason) == ("first answer", "done")
    assert (second.answer, second.stop_reason) == ("second answer", "done")
    assert [s.content for s in second.steps] == ["and again", "second answer"]
    assert state.status == "waiting" and state.turns == 2
    assert [(s.role, s.content) for s in state.steps] == [
        ("user", "hello"),
        ("assistant", "first answer"),
        ("user", "and again"),
        ("assistant", "second answer"),
    ]


async def test_the_model_of_a_later_turn_reads_the_whole_conversation(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(session_agent("one", "two"))
        await session.send("hello")
        await session.send("again")
        seen = await session.model_input(step=2)
    assert [(m.role, m.content) for m in seen.messages] == [
        ("user", "hello"),
        ("assistant", "one"),
        ("user", "again"),
    ]


async def test_a_signalled_message_is_answered_without_the_sender_waiting(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(session_agent("heard you"))
        await session.post("fire and forget")
        while (state := await session.state()).turns < 1 or state.status != "waiting":
            await asyncio.sleep(0.05)
    assert [(s.role, s.content) for s in state.steps] == [("user", "fire and forget"), ("assistant", "heard you")]


@pytest.mark.parametrize(
    ("message", "why"),
    [("", "empty"), ("   ", "empty"), ("x" * 101, "max_message_chars=100")],
)
async def test_a_bad_message_is_refused_before_it_enters_history(stalwart, worker_with, message, why):
    async with worker_with():
        session = await stalwart.start_session(session_agent("unused", max_message_chars=100))
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await session.send(message)
        history = await session.history()
    assert why in str(refused.value.cause)
    assert isinstance(refused.value, MessageRefused) and why in str(refused.value)
    assert not any(e.HasField("workflow_execution_update_accepted_event_attributes") for e in history.events)


async def test_close_ends_the_session_with_stop_reason_closed_and_refuses_later_messages(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(session_agent("hi"))
        await session.send("hello")
        result = await session.close()
        with pytest.raises(SessionClosed, match="has ended"):
            await session.send("too late")
    assert result.stop_reason == "closed"
    assert result.answer == "hi"
    assert [s.content for s in result.steps] == ["hello", "hi"]


async def test_an_idle_session_ends_with_stop_reason_idle_after_its_timeout(own_time_skipping_env: WorkflowEnvironment):
    from stalwart.workers.worker import build_worker

    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    stalwart = StalwartClient(own_time_skipping_env.client, task_queue=task_queue)
    async with build_worker(own_time_skipping_env.client, task_queue=task_queue):
        session = await stalwart.start_session(session_agent("hi", idle_timeout_seconds=86400))
        await session.send("hello")
        result = await session.result()  # a day of workflow time passes while nobody writes
    assert result.stop_reason == "idle"
    assert result.elapsed_seconds >= 86400


async def test_a_message_to_a_plain_run_by_update_is_refused_with_how_to_start_a_session(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(session_agent("done"), "a goal")
        await handle.result()
    async with worker_with():
        with pytest.raises(SessionClosed, match="start a new one with `stalwart session start"):
            await stalwart.session(handle.run_id).send("more")


async def test_send_with_the_agent_starts_the_session_once_and_then_talks_to_it(stalwart, worker_with):
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    agent = session_agent("created", "reused")
    async with worker_with():
        first = await stalwart.send(session_id, "start it", agent=agent)
        second = await stalwart.send(session_id, "talk to it", agent=agent)
        state = await stalwart.session(session_id).state()
    assert (first.answer, second.answer) == ("created", "reused")
    assert state.turns == 2 and state.runs == 1


async def test_a_closed_session_counts_the_turns_and_runs_of_its_whole_chain(stalwart, worker_with):
    answers = [f"answer {n}" for n in range(12)]
    async with worker_with():
        session = await stalwart.start_session(session_agent(*answers, continue_as_new_events=50))
        for n in range(len(answers)):
            await session.send(f"message {n}")
        open_state = await session.state()
        await session.close()
        closed_state = await session.state()
        runs = len(await session.histories())
    assert runs > 2
    assert (open_state.turns, open_state.runs) == (len(answers), runs)
    assert (closed_state.turns, closed_state.runs) == (len(answers), runs)


release = asyncio.Event()
tool_entered = asyncio.Event()


@tool
async def wait_for_release(topic: str) -> str:
    """Waits until the test lets it finish.

    Args:
        topic: Anything.
    """
    tool_entered.set()
    await release.wait()
    return f"released {topic}"


def busy_agent(answer: str, **overrides: object) -> AgentSpec:
    """A session agent whose first step waits in `wait_for_release` (reset here), then answers `answer`."""
    release.clear()
    tool_entered.clear()
    return AgentSpec(
        name="busy",
        tools=["wait_for_release"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="wait_for_release", arguments={"topic": "x"})]),
            ScriptedReply(text=answer),
        ],
        session=SessionSettings(),
        **overrides,
    )


async def test_messages_that_arrive_during_a_turn_reach_the_model_at_its_next_step_in_order(stalwart, worker_with):
    agent = busy_agent("read both")
    async with worker_with(wait_for_release):
        session = await stalwart.start_session(agent)
        first = asyncio.create_task(session.send("start"))
        await tool_entered.wait()
        await session.post("second")
        await session.post("third")
        while (await session.state()).queued < 2:
            await asyncio.sleep(0.05)
        release.set()
        result = await first
        seen = await session.model_input(step=2)
    assert result.answer == "read both"
    assert [m.content for m in seen.messages if m.role == "user"] == ["start", "second", "third"]
    assert [s.content for s in result.steps if s.role == "user"] == ["start", "second", "third"]


async def _closed_mid_turn(stalwart: StalwartClient) -> tuple[SessionHandle, asyncio.Task[AgentResult]]:
    """A session of `busy_agent` whose first turn waits in its tool, and `close` signalled then: what comes next
    arrives after `close` while the session still answers."""
    session = await stalwart.start_session(busy_agent("read the late one"))
    first = asyncio.create_task(session.send("start"))
    await tool_entered.wait()
    await stalwart.temporal.get_workflow_handle(session.run_id).signal("close")
    return session, first


async def test_a_message_signalled_after_close_while_a_turn_runs_is_answered_before_the_session_ends(
    stalwart, worker_with
):
    async with worker_with(wait_for_release):
        session, first = await _closed_mid_turn(stalwart)
        await session.post("one more thing")  # `send --no-wait`: its sender was told it was delivered
        release.set()
        answered = await first
        result = await session.result()
    assert result.stop_reason == "closed"
    assert [s.content for s in answered.steps if s.role == "user"] == ["start", "one more thing"]
    assert [(s.role, s.content) for s in result.steps if s.role != "tool"][-2:] == [
        ("user", "one more thing"),
        ("assistant", "read the late one"),
    ]


async def test_a_message_sent_by_update_after_close_is_refused_with_the_reason(stalwart, worker_with):
    async with worker_with(wait_for_release):
        session, first = await _closed_mid_turn(stalwart)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await session.send("too late")
        release.set()
        await first
        result = await session.result()
    assert "the session is closed" in str(refused.value.cause)
    assert "too late" not in [s.content for s in result.steps]


async def test_a_message_that_arrives_as_a_turn_spends_its_last_step_is_answered_by_the_next_turn(
    stalwart, worker_with
):
    agent = busy_agent("answered the second", budgets=Budgets(max_steps=1))
    async with worker_with(wait_for_release):
        session = await stalwart.start_session(agent)
        first = asyncio.create_task(session.send("first"))
        await tool_entered.wait()
        second = asyncio.create_task(session.send("second"))
        while (await session.state()).queued < 1:
            await asyncio.sleep(0.05)
        release.set()
        spent, answered = await first, await second
        seen = await session.model_input(step=2)
    assert spent.stop_reason == "max_steps"
    assert [s.content for s in spent.steps if s.role == "user"] == ["first"]
    assert (answered.stop_reason, answered.answer) == ("done", "answered the second")
    assert [s.content for s in answered.steps if s.role == "user"] == ["second"]
    assert [m.content for m in seen.messages if m.role == "user"] == ["first", "second"]


@pytest.mark.slow
async def test_a_message_signalled_from_the_temporal_cli_is_answered(dev_env, task_queue):
    from stalwart.workers.dev_server import find_executable
    from stalwart.workers.worker import build_worker

    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await stalwart.start_session(session_agent("heard the CLI"))
        signal = await asyncio.create_subprocess_exec(
            str(find_executable("temporal")),
            *("workflow", "signal", "--address", dev_env.address, "--workflow-id", session.run_id),
            *("--name", "message", "--input", '"hello from the temporal CLI"'),
        )
        assert await signal.wait() == 0
        while (state := await session.state()).turns < 1 or state.status != "waiting":
            await asyncio.sleep(0.05)
    assert [(s.role, s.content) for s in state.steps] == [
        ("user", "hello from the temporal CLI"),
        ("assistant", "heard the CLI"),
    ]


async def test_token_totals_accumulate_over_the_whole_session_while_each_turn_reports_its_own(
    stalwart, worker_with, time_skipping_env
):
    async with worker_with():
        session = await stalwart.start_session(session_agent("a", "b", "c"))
        turns = [await session.send(text) for text in ("one", "two", "three")]
        state = await session.state()
        # Quick turns publish their counters once `COUNTERS_EVERY` has passed since the last upsert.
        await time_skipping_env.sleep(COUNTERS_EVERY.total_seconds())
        described = stalwart.temporal.get_workflow_handle(session.run_id).describe
        while (attributes := (await described()).typed_search_attributes).get(names.AGENT_TOKENS) != 60:
            await asyncio.sleep(0.05)
    assert [t.usage.total_tokens for t in turns] == [20, 20, 20]
    assert state.usage.total_tokens == 60
    assert attributes.get(names.AGENT_STATUS) == "waiting"


async def test_a_session_that_spent_its_lifetime_cost_cap_refuses_further_messages(
    stalwart, worker_with, tmp_path, monkeypatch
):
    from stalwart.activities.pricing import PRICES_ENV

    table = tmp_path / "prices.json"
    table.write_text('{"scripted": {"input": 1000.0, "output": 1000.0}}')  # USD per million tokens: 0.02 a turn
    monkeypatch.setenv(PRICES_ENV, str(table))
    async with worker_with():
        session = await stalwart.start_session(session_agent("one", "two", "three", max_cost_usd=0.03))
        first, second = await session.send("a"), await session.send("b")
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await session.send("c")
    assert (first.stop_reason, second.stop_reason) == ("done", "done"), "each turn began under the cap"
    assert "max_cost_usd=0.03" in str(refused.value.cause)
