"""The KAOS text action protocols: the seed's prompts, its parsing, its mock sequences,
and over every provider's wire."""

from __future__ import annotations

import json

from flavors import Flavor, agent_for, run_agent, start_run

from stalwart.activities.protocols import fenced, json_actions
from stalwart.activities.protocols.prompts import fenced_system_prompt, json_system_prompt
from stalwart.activities.providers.scripted import MOCK_ENV
from stalwart.client.api import StalwartClient
from stalwart.client.stream import AnswerDelta, stream_answer
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.tools import ToolSpec
from stalwart.workers.worker import build_worker
from stalwart.workflows.conversation import FINAL_RESPONSE_PROMPT

from wire_server.script import Reply

SEED_MOCK = ['{"tool": "echo", "arguments": {"text": "hello"}}', "{}", "The echo returned: hello"]
SEED_FENCED_CALCULATOR = """I'll use the calculator tool to compute this.

```tool_call
{"tool": "calculate", "arguments": {"expression": "2 + 2"}}
```"""
SEED_FENCED_ECHO = """I'll use the echo tool.

```tool_call
{"tool": "echo", "arguments": {"text": "hello"}}
```"""
ECHO = ToolSpec(
    name="echo", description="Echo text back", parameters={"type": "object", "properties": {"text": {"type": "string"}}}
)


# -- JSON actions (seed 000) ------------------------------------------------------


def test_json_tool_action_becomes_a_tool_call():
    reading = json_actions.read('{"tool": "calculator", "arguments": {"expression": "2 + 2"}}', step=3)
    [call] = reading.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_3_1", "calculator", {"expression": "2 + 2"})


def test_json_action_inside_prose_is_found_by_its_balanced_braces():
    reply = 'I will compute it.\n{"tool": "calculator", "arguments": {"expression": "(1+2)*3"}} then answer.'
    [call] = json_actions.read(reply, step=1).tool_calls
    assert call.arguments == {"expression": "(1+2)*3"}


def test_json_empty_object_asks_for_the_final_answer():
    reading = json_actions.read("{}", step=2)
    assert reading.wants_final_answer and not reading.tool_calls and reading.feedback is None


def test_json_reply_without_an_action_asks_for_the_final_answer():
    assert json_actions.read("Hello! How can I help you?", step=1).wants_final_answer


def test_json_action_whose_tool_is_not_a_name_is_fed_back_with_the_format():
    reading = json_actions.read('{"tool": 42, "arguments": {"text": "hi"}}', step=1)
    assert (
        reading.feedback is not None and '{"tool": "tool_name"' in reading.feedback and not reading.wants_final_answer
    )


def test_json_arguments_that_are_not_an_object_become_an_arguments_error():
    [call] = json_actions.read('{"tool": "echo", "arguments": ["hi"]}', step=1).tool_calls
    assert call.arguments_error is not None and "JSON object" in call.arguments_error


def test_json_system_prompt_has_the_seed_sections_in_order():
    prompt = json_system_prompt("You are terse.", [ECHO])
    parts = [
        "You are terse.",
        "## Available Tools",
        "- **echo**: Echo text back",
        "respond with ONLY this JSON",
        "respond with ONLY:\n{}",
    ]
    positions = [prompt.index(p) for p in parts]
    assert positions == sorted(positions)


# -- fenced blocks (seed 001) ---------------------------------------------------------


def test_fenced_seed_example_reply_is_a_tool_call():
    [call] = fenced.read(SEED_FENCED_CALCULATOR, step=1).tool_calls
    assert (call.name, call.arguments) == ("calculate", {"expression": "2 + 2"})


def test_fenced_seed_mock_reply_is_an_echo_call():
    [call] = fenced.read(SEED_FENCED_ECHO, step=1).tool_calls
    assert (call.name, call.arguments) == ("echo", {"text": "hello"})


def test_fenced_reply_without_a_block_is_the_answer():
    reading = fenced.read("2 + 2 is 4.", step=2)
    assert not reading.tool_calls and reading.feedback is None and not reading.wants_final_answer


def test_fenced_block_with_broken_json_is_fed_back():
    reading = fenced.read('```tool_call\n{"tool": "echo", "arguments": {"text": }\n```', step=1)
    assert reading.feedback is not None and "```tool_call" in reading.feedback


def test_fenced_blocks_in_one_reply_are_parallel_calls():
    reply = SEED_FENCED_ECHO + "\n\n" + SEED_FENCED_CALCULATOR.split("\n\n", 1)[1]
    assert [c.id for c in fenced.read(reply, step=4).tool_calls] == ["call_4_1", "call_4_2"]


def test_fenced_system_prompt_has_the_seed_block_format():
    prompt = fenced_system_prompt("You are terse.", [ECHO])
    assert (
        "## Available Tools" in prompt
        and '```tool_call\n{"tool": "tool_name", "arguments": {"arg1": "value1"}}\n```' in prompt
    )


# -- runs --------------------------------------------------------------------------------


async def test_seed_mock_sequence_gives_the_seed_event_list(time_skipping_env, task_queue, monkeypatch):
    monkeypatch.setenv(MOCK_ENV, json.dumps(SEED_MOCK))
    agent = AgentSpec(name="kaos", tools=["echo"], action_format="json")
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(agent, "Echo hello")
        result = await run.result()
        events = await run.events()
    assert (result.stop_reason, result.answer) == ("done", "The echo returned: hello")
    assert [e.event_type for e in events] == ["user_message", "tool_call", "tool_result", "agent_response"]
    assert events[2].content == "hello"


async def test_json_action_that_does_not_parse_is_no_action_as_in_the_seed(time_skipping_env, task_queue, monkeypatch):
    """Seed 000's parser returns `{}  # No action found` for JSON it cannot read: the final response follows."""
    monkeypatch.setenv(MOCK_ENV, json.dumps(['{"tool": "echo", "arguments": {"text": ', "Done."]))
    agent = AgentSpec(name="kaos", tools=["echo"], action_format="json")
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        result = await stalwart.run(agent, "Echo hello")
    assert (result.stop_reason, result.answer) == ("done", "Done.")
    assert not [s for s in result.steps if s.role == "tool"]


async def test_json_protocol_over_the_wire(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(
        Reply(text='{"tool": "calculator", "arguments": {"expression": "17*23+4"}}'),
        Reply(text="{}"),
        Reply(text="It is 395."),
    )
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, action_format="json"))
    assert (result.stop_reason, result.answer) == ("done", "It is 395.")
    first, second, third = (r.body for r in script.requests)
    assert "tools" not in first and "## Available Tools" in flavor.texts_of(first)[0][1]
    assert ("user", "Tool result: 395") in flavor.texts_of(second)
    assert flavor.texts_of(third)[-1] == ("user", FINAL_RESPONSE_PROMPT)


async def test_fenced_protocol_over_the_wire(time_skipping_env, task_queue, wire, flavor: Flavor):
    block = '```tool_call\n{"tool": "calculator", "arguments": {"expression": "17*23+4"}}\n```'
    script = wire.script(Reply(text=f"I'll use the calculator.\n\n{block}"), Reply(text="It is 395."))
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, action_format="fenced"))
    assert (result.stop_reason, result.answer) == ("done", "It is 395.")
    assert ("user", "Tool result: 395") in flavor.texts_of(script.requests[1].body)


async def test_json_protocol_streams_only_the_final_answer(time_skipping_env, task_queue, wire, flavor: Flavor):
    action = '{"tool": "calculator", "arguments": {"expression": "17*23+4"}}'
    answer = "Seventeen times twenty-three plus four is three hundred and ninety-five."
    script = wire.script(Reply(text=action, pause=0.05), Reply(text="{}", pause=0.05), Reply(text=answer, pause=0.05))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(
            time_skipping_env, task_queue, agent_for(flavor, script, action_format="json"), "What is 17*23+4?"
        )
        events = [event async for event in stream_answer(handle, poll_interval=0.05)]
    assert events and all(isinstance(e, AnswerDelta) and e.step == 3 for e in events)
    assert "".join(e.text for e in events) == answer
