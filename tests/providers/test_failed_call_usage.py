"""Issue 43, item 6: the tokens a provider reported for a model call that then failed for good are counted.

The activity puts what the call's attempts spent in its failure's details; the workflow charges it to the turn's
budget and the run's usage, and the failed step shows it.
"""

from __future__ import annotations

from flavors import FLAVORS, agent_for, run_agent

from wire_server.script import Broken, Reply

ANTHROPIC = next(flavor for flavor in FLAVORS if flavor.id == "anthropic")


async def test_tokens_reported_before_a_call_failed_for_good_are_counted_in_the_run_and_its_step(
    time_skipping_env, task_queue, wire, monkeypatch
):
    monkeypatch.setenv(ANTHROPIC.key_env, "sk-test-anthropic-0123456789")
    # invalid_request_error is not retried: the call fails for good after message_start reported 500 tokens in.
    script = wire.script(
        Broken(Reply(text="unused", input_tokens=500), events=3, kind="invalid_request_error", message="bad request")
    )
    result = await run_agent(time_skipping_env, task_queue, agent_for(ANTHROPIC, script, tools=[]))
    assert (result.stop_reason, len(script.requests)) == ("error", 1)
    [step] = [s for s in result.steps if s.role == "assistant"]
    assert step.error is not None and "bad request" in step.error
    assert step.usage is not None and step.usage.input_tokens == 500
    assert result.usage.input_tokens == 500
