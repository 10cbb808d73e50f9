"""A session's turn that a budget stops gives its answer as an `agent_response`, as a run's does (a run's events end
with `Reached maximum reasoning steps (N)`; a session's turns had none, their answer said only by `send`)."""

from __future__ import annotations

from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall

LOOPING = ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "again"})])


async def test_each_turn_a_budget_stops_gives_its_answer_as_an_agent_response(stalwart, worker_with):
    agent = AgentSpec(
        name="looper",
        tools=["echo"],
        scripted=[LOOPING, LOOPING, ScriptedReply(text="done")],
        budgets=Budgets(max_steps=1),
    )
    async with worker_with():
        session = await stalwart.start_session(agent)
        first = await session.send("loop")
        second = await session.send("loop again")
        third = await session.send("answer")
        events = await session.events()
    assert [turn.stop_reason for turn in (first, second)] == ["max_steps", "max_steps"]
    answers = [(e.event_type, e.content) for e in events if e.event_type in ("user_message", "agent_response")]
    assert answers == [
        ("user_message", "loop"),
        ("agent_response", "Reached maximum reasoning steps (1)"),
        ("user_message", "loop again"),
        ("agent_response", "Reached maximum reasoning steps (1)"),
        ("user_message", "answer"),
        ("agent_response", third.answer),
    ]
    assert len({e.event_id for e in events}) == len(events)
