"""Seed 004, Prompty §9: streaming in agent mode and the Responses wire format, over every provider's wire.

Each test quotes the line of `../shared/reference/seeds/004_dc40ce8e68befaaf.txt` it checks.
"""

from __future__ import annotations

from flavors import FLAVORS, Flavor, agent_for, run_agent, start_run

from stalwart.client.stream import AnswerDelta, AnswerRetracted, stream_answer
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Reply

CALC = Call("calculator", {"expression": "17*23+4"})
PREAMBLE = "Let me work that out with the calculator first, step by step, before I answer you."
ANSWER = "Seventeen times twenty-three is three hundred and ninety-one; four more makes three hundred and ninety-five."


async def test_text_of_an_iteration_that_calls_tools_never_reaches_the_caller(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    """Prompty §9.3: "If tool_calls are detected ...: MUST accumulate ALL chunks ... MUST NOT yield content to
    the caller for this iteration." The client polls faster than the preamble is written, so a preamble shown
    even briefly would be seen (and, before this, was shown and then retracted)."""
    script = wire.script(Reply(text=PREAMBLE, calls=(CALC,), pause=0.05), Reply(text=ANSWER, pause=0.05))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script), "What is 17*23+4?")
        events = [event async for event in stream_answer(handle, poll_interval=0.01)]
        result = await handle.result()
    assert result.answer == ANSWER and result.steps[1].content == PREAMBLE  # the record keeps the preamble
    assert not [e for e in events if e.step == 1], "text of the tool-calling iteration reached the caller"
    assert not [e for e in events if isinstance(e, AnswerRetracted)]
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == ANSWER


async def test_an_iteration_that_cannot_call_tools_streams_as_it_arrives(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    """Prompty §9.3: "If only content is detected (no tool_calls): This is the final response — SHOULD yield
    content chunks ... to the caller as they arrive." With no tools to call, a turn is known final at once."""
    script = wire.script(Reply(text=ANSWER, pause=0.05))  # a word every 0.05 s, about a second in all
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]), "Explain.")
        events = [event async for event in stream_answer(handle, poll_interval=0.02)]
    deltas = [e.text for e in events if isinstance(e, AnswerDelta)]
    print(f"\n{flavor.id}: the answer arrived in {len(deltas)} pieces")
    assert "".join(deltas) == ANSWER and len(deltas) > 2


async def test_responses_function_call_items_go_back_whole_with_their_id(
    time_skipping_env, task_queue, wire, monkeypatch
):
    """Prompty §9.4, OpenAI Responses API: "// MUST include original function_call item in input
    { "type": "function_call", "id": "fc_123", "call_id": "call_123", "name": "get_weather", "arguments": ... }"
    (the other wire formats: test_provider_behaviour.py::test_assistant_turn_goes_back_in_its_native_form)."""
    [responses] = [f for f in FLAVORS if f.id == "openai-responses"]
    monkeypatch.setenv(responses.key_env, "sk-test-responses-0123456789")
    spaced = Call("calculator", raw_arguments='{ "expression" :  "17*23+4" }')
    script = wire.script(Reply(calls=(spaced, CALC)), Reply(text=ANSWER))
    result = await run_agent(time_skipping_env, task_queue, agent_for(responses, script))
    assert result.answer == ANSWER
    first, second = (r.body for r in script.requests)
    assert second["input"][: len(first["input"])] == first["input"]
    calls = [item for item in second["input"] if item.get("type") == "function_call"]
    assert [(c["id"], c["call_id"], c["name"]) for c in calls] == [
        ("fc_0", "call_0", "calculator"),
        ("fc_1", "call_1", "calculator"),
    ]
    assert calls[0]["arguments"] == '{ "expression" :  "17*23+4" }'  # as the model wrote it, not re-serialised
    outputs = [(i["call_id"], i["output"]) for i in second["input"] if i.get("type") == "function_call_output"]
    assert outputs == [("call_0", "395"), ("call_1", "395")]
