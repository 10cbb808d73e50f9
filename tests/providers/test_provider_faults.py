"""Issue 11, defects 3 and 5, through the real openai and anthropic SDKs against the local wire server:
garbage bodies are classified and retried briefly, the provider's stop reason is recorded on every step, a reply cut
off by the output-token limit never ends a run `done`, and usage is clamped or estimated instead of trusted blindly."""

from __future__ import annotations

import io

from flavors import Flavor, agent_for, run_agent

from stalwart.activities.providers.base import ModelGarbledError
from stalwart.client.render import print_result, step_line
from stalwart.contracts.agent import Budgets

from wire_server.script import Call, Garbage, Reply

JUNK = b"\xff\xfe\x00\x81\x9fPK\x03\x04binary junk " * 20
CALC = Call("calculator", {"expression": "6*7"})
STOP_REASONS = {
    "openai-chat": ("tool_calls", "stop", "length"),
    "openai-compatible": ("tool_calls", "stop", "length"),
    "openai-responses": ("completed", "completed", "incomplete: max_output_tokens"),
    "anthropic": ("tool_use", "end_turn", "max_tokens"),
}


async def test_provider_garbage_is_classified_and_retried_briefly_then_stops(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    attempts = ModelGarbledError.MAX_ATTEMPTS
    script = wire.script(*[Garbage(200, JUNK, "application/json")] * (attempts + 5))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    print(f"\n{flavor.id}: {len(script.requests)} requests -> {result.error}")
    assert result.stop_reason == "error"
    assert len(script.requests) == attempts, "garbage is retried a few times, not the model policy's 8"
    error = result.error or ""
    assert "UnicodeDecodeError" not in error
    provider = flavor.model.split(":")[0]
    assert provider in error and script.root in error, "names the provider and where it was called"
    assert "HTTP 200 (application/json)" in error and "not UTF-8" in error
    assert "\\xff\\xfe\\x00\\x81" in error, "shows what came back, escaped"
    assert len(error) < 800, "what came back is shortened"
    assert f"Gave up after {attempts} attempts" in error


async def test_provider_garbage_then_a_good_answer_finishes_the_run(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Garbage(200, b"data: {not json\n\n", "text/event-stream"), Reply(text="fine now"))
    garbled_html = wire.script(Garbage(200, b"<html>Service Unavailable</html>", "text/html"), Reply(text="ok"))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", "fine now", 2)
    result = await run_agent(time_skipping_env, task_queue + "-html", agent_for(flavor, garbled_html, tools=[]))
    assert (result.stop_reason, result.answer, len(garbled_html.requests)) == ("done", "ok", 2)


async def test_provider_stop_reason_is_recorded_on_every_step(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(calls=(CALC,)), Reply(text="42"))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert result.stop_reason == "done"
    called, answered, _ = STOP_REASONS[flavor.id]
    assert [s.stop_reason for s in result.steps if s.role == "assistant"] == [called, answered]


async def test_truncated_answer_does_not_end_the_run_done_but_stops_with_max_tokens(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(text="The answer, in full, is that seventeen times", truncated=True))
    result = await run_agent(
        time_skipping_env, task_queue, agent_for(flavor, script, tools=[], max_output_tokens=10), "Explain 17*23"
    )
    assert result.stop_reason == "max_tokens"
    assert result.answer == ""
    [step] = [s for s in result.steps if s.role == "assistant"]
    assert step.stop_reason == STOP_REASONS[flavor.id][2] and not step.final
    assert step.content.startswith("The answer, in full")
    assert "cut off by its output-token limit" in (result.error or "")
    assert "max_output_tokens = 10" in (result.error or "")
    assert f"CUT OFF: {step.stop_reason}" in step_line(step)


async def test_truncated_tool_call_is_not_run(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(calls=(Call("calculator", raw_arguments='{"expression": "6*'),), truncated=True))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert result.stop_reason == "max_tokens"
    assert [s.role for s in result.steps] == ["user", "assistant"]


async def test_negative_usage_is_clamped_and_never_lowers_the_totals(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(calls=(CALC,)), Reply(text="42", input_tokens=-5000, output_tokens=-300))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert result.stop_reason == "done"
    first, second = [s.usage for s in result.steps if s.role == "assistant"]
    assert second.input_tokens > 0 and second.output_tokens > 0 and second.estimated
    assert not first.estimated
    assert result.usage.input_tokens >= first.input_tokens and result.usage.output_tokens >= first.output_tokens
    assert result.usage.estimated


async def test_usage_with_an_input_count_left_out_is_estimated(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(text="42", input_tokens=0, output_tokens=7))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]), "x" * 400)
    [step] = [s for s in result.steps if s.role == "assistant"]
    assert step.usage.input_tokens >= 100 and step.usage.output_tokens == 7 and step.usage.estimated


async def test_missing_usage_is_estimated_so_the_token_budget_still_fires(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    calls = [Reply(calls=(CALC,), usage=False) for _ in range(20)]
    script = wire.script(*calls)
    agent = agent_for(flavor, script, budgets=Budgets(max_tokens=300, max_steps=20), thrash_guard=False)
    result = await run_agent(time_skipping_env, task_queue, agent, "Compute 6*7 over and over " + "x" * 400)
    print(f"\n{flavor.id}: no usage reported -> {result.usage} after {len(script.requests)} requests")
    assert result.stop_reason == "max_tokens", "the budget must fire on estimates when the provider reports nothing"
    assert len(script.requests) < 20
    assert result.usage.estimated and result.usage.total_tokens >= 300
    assert all(s.usage.estimated and s.usage.input_tokens > 100 for s in result.steps if s.role == "assistant")
    printed = io.StringIO()
    print_result(result, None, printed)
    assert "budgets were enforced on them" in printed.getvalue()


async def test_a_base_url_no_http_client_can_open_ends_the_run_at_once_naming_base_url(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    """`check` cannot know every URL the SDKs' HTTP client refuses (here an IDNA host it cannot encode); the run
    stops on the first attempt instead of retrying a configuration error for minutes."""
    agent = agent_for(flavor, wire.script(), tools=[]).model_copy(update={"base_url": "http://\u3002.example/v1"})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert result.stop_reason == "error"
    error = result.error or ""
    assert "fix `base_url` in the agent file" in error and "Invalid IDNA hostname" in error
    assert "Gave up after" not in error, "a configuration error is not retried"
