"""The behaviour every provider shares, driven through the real openai and anthropic SDKs
against the local wire server."""

from __future__ import annotations

import json
import os
import time

import pytest
from flavors import Flavor, agent_for, run_agent, start_run

from stalwart.client.api import StalwartClient
from stalwart.client.stream import AnswerDelta, AnswerRetracted, stream_answer
from stalwart.contracts.messages import Usage
from stalwart.workers.worker import build_worker

from wire_server.script import Broken, Call, Cut, Fail, Freeze, Reply, Stall

CALC = Call("calculator", {"expression": "17*23+4"})
ANSWER = "The answer is 395."
LONG_ANSWER = (
    "Seventeen times twenty-three is three hundred and ninety-one, and four more makes three hundred and ninety-five."
)


async def test_tool_call_then_result_then_final_answer(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(calls=(CALC,)), Reply(text=ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert (result.stop_reason, result.answer) == ("done", ANSWER)
    [tool_step] = [s for s in result.steps if s.role == "tool"]
    assert flavor.results_of(script.requests[1].body) == [(tool_step.tool_call_id, "395")]


async def test_parallel_tool_calls_are_answered_in_call_order(time_skipping_env, task_queue, wire, flavor: Flavor):
    calls = (Call("calculator", {"expression": "2*3"}), Call("calculator", {"expression": "10-4+1"}))
    script = wire.script(Reply(calls=calls), Reply(text="6 and 7"))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert result.stop_reason == "done"
    ids = [s.tool_call_id for s in result.steps if s.role == "tool"]
    assert flavor.results_of(script.requests[1].body) == [(ids[0], "6"), (ids[1], "7")]


async def test_rate_limit_is_retried_after_the_retry_after_delay(time_skipping_env, task_queue, wire, flavor: Flavor):
    """On the time-skipping server the wait is skipped, but Temporal's clock shows it:
    the step took the 2 s asked for."""
    script = wire.script(Fail(429, "rate_limit_error", "Rate limit reached", retry_after=2), Reply(text=ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 2)
    [step] = [s for s in result.steps if s.role == "assistant"]
    waited = (step.ended_at - step.started_at).total_seconds()
    print(f"\n{flavor.id}: 429 Retry-After 2s -> step took {waited:.2f}s of workflow time")
    assert waited >= 2


@pytest.mark.slow
async def test_rate_limit_retry_waits_the_retry_after_delay_in_real_time(dev_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Fail(429, "rate_limit_error", "Rate limit reached", retry_after=2), Reply(text=ANSWER))
    result = await run_agent(dev_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer) == ("done", ANSWER)
    waited = script.requests[1].at - script.requests[0].at
    print(f"\n{flavor.id}: 429 Retry-After 2s -> next request after {waited:.2f}s (dev server)")
    assert waited >= 2


async def test_server_error_is_retried(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Fail(500, "server_error", "The server had an error"), Reply(text=ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 2)
    print(f"\n{flavor.id}: 500 -> retried after {script.requests[1].at - script.requests[0].at:.2f}s")


async def test_unauthorized_fails_at_once_naming_the_key_to_set(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Fail(401, "authentication_error", "Incorrect API key provided: sk-test...6789"))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, len(script.requests)) == ("error", 1)
    assert "401" in result.error and f"`{flavor.key_env}`" in result.error and "restart the worker" in result.error


async def test_missing_key_fails_at_once_naming_the_variable(
    time_skipping_env, task_queue, wire, flavor: Flavor, monkeypatch
):
    monkeypatch.delenv(flavor.key_env)
    script = wire.script(Reply(text=ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, len(script.requests)) == ("error", 0)
    assert f"`{flavor.key_env}`" in result.error and "worker" in result.error


async def test_context_length_error_fails_at_once_suggesting_history_limit(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    message = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."
    script = wire.script(Fail(400, "invalid_request_error", message))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, len(script.requests)) == ("error", 1)
    assert "context window" in result.error and "history_limit" in result.error


async def test_slow_first_token_is_cut_and_retried(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Stall(seconds=60), Reply(text=ANSWER))
    agent = agent_for(flavor, script, tools=[], extra={"first_token_seconds": 1})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 2)
    print(f"\n{flavor.id}: stalled stream -> retried after {script.requests[1].at - script.requests[0].at:.2f}s")


async def test_first_token_may_take_longer_than_the_stall_deadline(time_skipping_env, task_queue, wire, flavor: Flavor):
    """`stall_seconds` bounds the silence between events; before the first one only `first_token_seconds` applies."""
    script = wire.script(Stall(seconds=1, then=Reply(text=ANSWER)))  # twice the stall deadline
    agent = agent_for(flavor, script, tools=[], extra={"first_token_seconds": 30, "stall_seconds": 0.5})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 1)


async def test_stream_cut_midway_is_retried(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Cut(Reply(text=LONG_ANSWER), events=4), Reply(text=LONG_ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", LONG_ANSWER, 2)


async def test_stream_that_goes_silent_midway_is_cut_and_retried(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Freeze(Reply(text=LONG_ANSWER), events=4, seconds=60), Reply(text=LONG_ANSWER))
    agent = agent_for(flavor, script, tools=[], extra={"stall_seconds": 1})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", LONG_ANSWER, 2)


async def test_malformed_tool_arguments_go_back_to_the_model_as_a_tool_error(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    broken = Call("calculator", raw_arguments='{"expression": "1+')
    script = wire.script(Reply(calls=(broken,)), Reply(text="Let me fix that."))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert result.stop_reason == "done"
    [(call_id, content)] = flavor.results_of(script.requests[1].body)
    [tool_step] = [s for s in result.steps if s.role == "tool"]
    assert call_id == tool_step.tool_call_id and "Malformed arguments" in content and "not valid JSON" in content


async def test_usage_is_summed_and_priced(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(
        Reply(calls=(CALC,), input_tokens=100, output_tokens=10, cached_tokens=40),
        Reply(text=ANSWER, input_tokens=150, output_tokens=20, cached_tokens=100),
    )
    agent = agent_for(flavor, script)
    result = await run_agent(time_skipping_env, task_queue, agent)
    # (uncached input, cached input, output) tokens: (60, 40, 10) + (50, 100, 20) at the table's list prices
    dollars = {
        "openai-chat": 0.000106,  # gpt-4.1-mini: $0.40 / $0.10 / $1.60 per million: 44 + 62 millionths
        "openai-responses": 0.000106,
        "anthropic": 0.000274,  # claude-haiku-4-5: $1.00 / $0.10 / $5.00 per million: 114 + 160 millionths
        "openai-compatible": 0.0,  # self-hosted and unpriced: free
    }[flavor.id]
    assert result.usage == Usage(input_tokens=250, output_tokens=30, cached_tokens=140, cost_usd=dollars)
    assert [s.usage.input_tokens for s in result.steps if s.role == "assistant"] == [100, 150]


async def test_api_key_never_enters_the_history(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(calls=(CALC,)), Reply(text=ANSWER))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script), "What is 17*23+4?")
        await handle.result()
        history = (await handle.fetch_history()).to_json()
    key = os.environ[flavor.key_env]
    sent = script.requests[0].headers
    assert key in (sent.get("authorization", "").removeprefix("Bearer "), sent.get("x-api-key"))
    assert key not in history and key[-10:] not in history


async def test_final_answer_streams_to_the_client_as_generated(time_skipping_env, task_queue, wire, flavor: Flavor):
    """A turn that cannot call tools is known final from its first token, and streams (Prompty §9.3)."""
    script = wire.script(Reply(text=LONG_ANSWER, pause=0.05))  # a word every 0.05 s, a second in all
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(agent_for(flavor, script, tools=[]), "What is 17*23+4?")
        events = [event async for event in run.stream(poll_interval=0.05)]
        result = await run.result()
    deltas = [e.text for e in events if isinstance(e, AnswerDelta)]
    print(f"\n{flavor.id}: the answer arrived in {len(deltas)} pieces")
    assert "".join(deltas) == result.answer == LONG_ANSWER
    assert len(deltas) > 2
    assert not [e for e in events if isinstance(e, AnswerRetracted)]


async def test_retried_stream_does_not_repeat_text_to_the_client(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Cut(Reply(text=LONG_ANSWER, pause=0.05), events=10), Reply(text=LONG_ANSWER, pause=0.05))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]), "Explain 17*23+4.")
        events = [(time.monotonic(), event) async for event in stream_answer(handle, poll_interval=0.05)]
    assert len(script.requests) == 2
    deltas = [(at, e.text) for at, e in events if isinstance(e, AnswerDelta)]
    assert [text for at, text in deltas if at < script.requests[1].at], "the cut attempt's text reached the client"
    assert "".join(text for _, text in deltas) == LONG_ANSWER
    assert not [e for _, e in events if isinstance(e, AnswerRetracted)]


async def test_text_before_a_tool_call_does_not_stay_in_the_streamed_answer(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(
        Reply(text="Let me work that out with the calculator first.", calls=(CALC,), pause=0.05),
        Reply(text=ANSWER, pause=0.05),
    )
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script), "What is 17*23+4?")
        events = [event async for event in stream_answer(handle, poll_interval=0.05)]
    shown: dict[int, str] = {}
    for event in events:
        shown[event.step] = shown.get(event.step, "") + event.text if isinstance(event, AnswerDelta) else ""
    assert "".join(shown.values()) == ANSWER


async def test_streaming_adds_no_history_events(time_skipping_env, task_queue, wire, flavor: Flavor):
    async def events_of_run(answer: str, queue: str) -> tuple[int, int]:
        """The run's history events, and how many pieces of the answer the client saw."""
        script = wire.script(Reply(text=answer, pause=0.02))
        async with build_worker(time_skipping_env.client, task_queue=queue):
            handle = await start_run(time_skipping_env, queue, agent_for(flavor, script, tools=[]), "What is 17*23+4?")
            deltas = [e async for e in stream_answer(handle, poll_interval=0.05) if isinstance(e, AnswerDelta)]
            return len((await handle.fetch_history()).events), len(deltas)

    short, _ = await events_of_run("395.", task_queue)
    long, pieces = await events_of_run(" ".join(["word"] * 60), task_queue + "-long")
    print(f"\n{flavor.id}: the long answer streamed in {pieces} pieces")
    assert pieces > 3, "the long answer must actually stream, or the equal event counts prove nothing"
    assert short == long


async def test_unknown_model_fails_at_once_naming_the_model(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Fail(404, "not_found_error", "The model does not exist or you do not have access to it."))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, len(script.requests)) == ("error", 1)
    assert (
        "404" in result.error and repr(flavor.model.split(":", 1)[1]) in result.error and "model name" in result.error
    )


async def test_error_event_in_the_middle_of_a_stream_is_retried(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(
        Broken(Reply(text=LONG_ANSWER), events=4, kind="overloaded_error", message="Overloaded"),
        Reply(text=LONG_ANSWER),
    )
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", LONG_ANSWER, 2)


async def test_assistant_turn_goes_back_in_its_native_form(time_skipping_env, task_queue, wire, flavor: Flavor):
    """Prompty §9.4: Anthropic blocks whole (signed thinking included), Responses items verbatim,
    chat `tool_calls` with their ids."""
    spaced_arguments = {"expression": "17*23+4"}
    spaced = Call("calculator", raw_arguments='{ "expression" :  "17*23+4" }')
    script = wire.script(Reply(text="Calculating.", calls=(spaced,), thinking="Multiply first."), Reply(text=ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script))
    assert result.stop_reason == "done"
    body = script.requests[1].body
    if flavor.id == "anthropic":
        [assistant] = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
        assert assistant["content"][0]["signature"] == "sig-thinking-1"
    elif flavor.id == "openai-responses":
        kinds = [
            (i.get("type"), i.get("id"))
            for i in body["input"]
            if i.get("type") in ("reasoning", "message", "function_call")
        ]
        assert kinds == [("reasoning", "rs_1"), ("message", "msg_1"), ("function_call", "fc_0")]
        assert body["input"][1]["encrypted_content"] == "enc-rs-1"
    else:
        [assistant] = [m for m in body["messages"] if m["role"] == "assistant"]
        [call] = assistant["tool_calls"]
        assert (assistant["content"], call["id"], json.loads(call["function"]["arguments"])) == (
            "Calculating.",
            "call_0",
            spaced_arguments,
        )
