"""`finalize_on_budget` through a real provider SDK against the wire server: the last call's reply is the answer
only when it is one. A call that fails, a reply cut off by the output-token limit, or one asking for tools leaves
the run with the budget's stop reason and answer, the call's step saying what happened."""

from __future__ import annotations

import pytest
from flavors import FLAVORS, Flavor, agent_for, run_agent

from stalwart.client.api import StalwartClient
from stalwart.client.render import step_line
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Fail, Reply

CALC = Call("calculator", {"expression": "6*7"})
FINALIZE = {"max_steps": 1, "finalize_on_budget": True}
MAX_STEPS_ANSWER = "Reached maximum reasoning steps (1)"


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Flavor:
    """OpenAI Chat Completions: the loop's handling is the same for every provider (the steps' fields)."""
    flavor = FLAVORS[0]
    monkeypatch.setenv(flavor.key_env, f"sk-test-{flavor.id}-0123456789")
    return flavor


async def test_a_finalize_reply_cut_off_by_the_output_token_limit_is_not_the_answer(
    time_skipping_env, task_queue, wire, chat: Flavor
):
    script = wire.script(Reply(calls=(CALC,)), Reply(text="The answer, in full, is", truncated=True))
    result = await run_agent(time_skipping_env, task_queue, agent_for(chat, script, budgets=FINALIZE))
    assert (result.stop_reason, result.answer) == ("max_steps", MAX_STEPS_ANSWER)
    last = result.steps[-1]
    assert (last.content, last.stop_reason, last.final) == ("The answer, in full, is", "length", False)
    assert "CUT OFF: length" in step_line(last)
    assert "cut off by its output-token limit" in (result.error or "")


async def test_a_failed_finalize_call_keeps_the_budget_stop_reason_and_answer(
    time_skipping_env, task_queue, wire, chat: Flavor
):
    script = wire.script(Reply(calls=(CALC,)), Fail(400, "invalid_request_error", "bad finalize"))
    result = await run_agent(time_skipping_env, task_queue, agent_for(chat, script, budgets=FINALIZE))
    assert (result.stop_reason, result.answer) == ("max_steps", MAX_STEPS_ANSWER)
    last = result.steps[-1]
    assert last.role == "assistant" and "bad finalize" in (last.error or "")
    assert "did not answer" in (result.error or "") and "bad finalize" in (result.error or "")


async def test_a_finalize_reply_asking_for_tools_runs_none_and_keeps_the_budget_answer(
    time_skipping_env, task_queue, wire, chat: Flavor
):
    script = wire.script(Reply(calls=(CALC,)), Reply(text="Let me check once more.", calls=(CALC,)))
    result = await run_agent(time_skipping_env, task_queue, agent_for(chat, script, budgets=FINALIZE))
    assert (result.stop_reason, result.answer) == ("max_steps", MAX_STEPS_ANSWER)
    assert [s.role for s in result.steps] == ["user", "assistant", "tool", "assistant"], "no tool ran"
    last = result.steps[-1]
    assert not last.final and "were not run" in (last.error or "")
    assert "(calls tools)" not in step_line(last)
    assert "asked for tools (calculator)" in (result.error or "")


async def test_a_session_turn_after_a_finalize_reply_asking_for_tools_sends_a_result_for_each_call(
    time_skipping_env, task_queue, wire, chat: Flavor
):
    script = wire.script(Reply(calls=(CALC,)), Reply(text="", calls=(CALC,)), Reply(text="second"))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        session = await StalwartClient(time_skipping_env.client, task_queue=task_queue).start_session(
            agent_for(chat, script, budgets=FINALIZE)
        )
        first = await session.send("one")
        second = await session.send("two")
        await session.close()
    assert (first.stop_reason, first.answer) == ("max_steps", MAX_STEPS_ANSWER)
    assert (second.stop_reason, second.answer) == ("done", "second")
    messages = script.requests[2].body["messages"]
    called = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert called == answered, "a provider refuses a tool call without its result"
