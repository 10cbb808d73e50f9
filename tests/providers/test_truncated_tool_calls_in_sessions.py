"""A reply cut off by the output-token limit stops the turn with `max_tokens` and its tool calls are not run; a
session goes on, and the conversation its next turn sends must answer each of those calls (OpenAI and Anthropic
refuse a tool call without its result: the session could not answer again)."""

from __future__ import annotations

import pytest
from flavors import FLAVORS, Flavor, agent_for

from stalwart.client.api import StalwartClient
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Reply

CALC = Call("calculator", {"expression": "6*7"})


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Flavor:
    flavor = FLAVORS[0]
    monkeypatch.setenv(flavor.key_env, f"sk-test-{flavor.id}-0123456789")
    return flavor


async def test_the_turn_after_a_cut_off_tool_call_sends_a_result_for_it(time_skipping_env, task_queue, wire, chat):
    script = wire.script(Reply(calls=(CALC,), truncated=True), Reply(text="second"))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        session = await StalwartClient(time_skipping_env.client, task_queue=task_queue).start_session(
            agent_for(chat, script)
        )
        first = await session.send("one")
        second = await session.send("two")
        await session.close()
    assert first.stop_reason == "max_tokens" and [s.role for s in first.steps] == ["user", "assistant"]
    assert (second.stop_reason, second.answer) == ("done", "second")
    messages = script.requests[1].body["messages"]
    called = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    assert [call_id for call_id, _ in results] == called == ["call_0"]
    assert "not run" in results[0][1] and "cut off" in results[0][1]
