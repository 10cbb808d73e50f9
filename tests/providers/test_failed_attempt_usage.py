"""Issue 43, item 6: the tokens a provider reported for an attempt that then failed are counted.

Anthropic reports a call's input tokens in `message_start`, before the answer; a stream that fails after it (here
an `overloaded_error` event) was billed for them, but the run counted only the attempt that succeeded.
"""

from __future__ import annotations

from flavors import FLAVORS, agent_for, run_agent

from wire_server.script import Broken, Reply

ANTHROPIC = next(flavor for flavor in FLAVORS if flavor.id == "anthropic")
ANSWER = "The answer is 395."


async def test_tokens_reported_before_a_stream_failed_are_counted_in_the_turn_that_succeeds(
    time_skipping_env, task_queue, wire, monkeypatch
):
    monkeypatch.setenv(ANTHROPIC.key_env, "sk-test-anthropic-0123456789")
    script = wire.script(
        Broken(Reply(text=ANSWER, input_tokens=500), events=3, kind="overloaded_error", message="Overloaded"),
        Reply(text=ANSWER, input_tokens=20, output_tokens=8),
    )
    result = await run_agent(time_skipping_env, task_queue, agent_for(ANTHROPIC, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 2)
    [step] = [s for s in result.steps if s.role == "assistant"]
    # The failed attempt reported 500 in and 1 out (message_start's count) before its error event.
    assert (step.usage.input_tokens, step.usage.output_tokens) == (520, 9)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (520, 9)
    assert not result.usage.estimated
