"""A turn a budget stops, with the scripted model: its answer when `finalize_on_budget`'s last call gives none, and
the memory events ending with the budget's answer as they end with the model's (tests/providers/ has the provider
replies the scripted model cannot give: cut off, failing, asking for tools)."""

from __future__ import annotations

from datetime import timedelta

from stalwart.contracts.agent import AgentSpec, Budgets, OutputSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.run import RunEvent

LOOPING = ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "again"})])


def agent(*replies: ScriptedReply, **fields: object) -> AgentSpec:
    return AgentSpec(name="tester", tools=["echo"], scripted=list(replies), **fields)  # type: ignore[arg-type]


async def test_an_empty_finalize_reply_leaves_the_budget_answer(stalwart, worker_with):
    spec = agent(LOOPING, ScriptedReply(text=" "), budgets=Budgets(max_steps=1, finalize_on_budget=True))
    async with worker_with():
        result = await stalwart.run(spec, "loop")
    assert (result.stop_reason, result.answer) == ("max_steps", "Reached maximum reasoning steps (1)")
    assert not result.steps[-1].final and "replied with no text" in (result.steps[-1].error or "")


async def test_a_failed_finalize_call_of_a_typed_output_turn_is_not_judged_against_the_schema(stalwart, worker_with):
    # The scripted model has no reply for the last call, which fails: the budget's own words are no answer to judge.
    spec = agent(
        LOOPING,
        budgets=Budgets(max_steps=1, finalize_on_budget=True),
        output=OutputSpec(schema={"type": "object", "required": ["x"]}),
    )
    async with worker_with():
        result = await stalwart.run(spec, "loop")
    assert (result.stop_reason, result.answer) == ("max_steps", "Reached maximum reasoning steps (1)")
    assert "did not answer" in (result.error or "")
    assert "does not fit" not in (result.error or "")


async def test_the_events_of_a_run_out_of_steps_end_with_its_answer(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(agent(LOOPING, LOOPING, LOOPING, budgets=Budgets(max_steps=2)), "loop")
        result = await handle.result()
        read = await handle.events()
        queried = await handle.query("events", list[RunEvent], rpc_timeout=timedelta(seconds=30))
        followed: list[RunEvent] = []
        await handle.follow(followed.append, progress=False)
    assert result.answer == "Reached maximum reasoning steps (2)"
    for events in (read, queried, followed):
        assert [(e.event_type, e.content) for e in events][-1] == ("agent_response", result.answer)
        assert sum(e.event_type == "agent_response" for e in events) == 1
        assert len({e.event_id for e in events}) == len(events)


async def test_the_events_of_a_finalized_run_hold_its_answer_once(stalwart, worker_with):
    spec = agent(LOOPING, ScriptedReply(text="best effort"), budgets=Budgets(max_steps=1, finalize_on_budget=True))
    async with worker_with():
        handle = await stalwart.start(spec, "loop")
        await handle.result()
        events = await handle.events()
    assert [(e.event_type, e.content) for e in events if e.event_type == "agent_response"] == [
        ("agent_response", "best effort")
    ]
