"""Seed 000, the KAOS two-phase JSON loop: action parsing, DEBUG_MOCK_RESPONSES and progress blocks.

Each test quotes the line of `../shared/reference/seeds/000_d8e46614fc9a5881.txt` (or of
`seed-behaviours.md`, which adds what the seed's source does) that it checks.
"""

from __future__ import annotations

import asyncio
import json
import sys
from io import StringIO

from stalwart.activities.protocols import json_actions
from stalwart.activities.providers.scripted import MOCK_ENV
from stalwart.client.api import StalwartClient
from stalwart.client.commands import runs
from stalwart.client.stream import AnswerDelta, Progress
from stalwart.contracts.agent import AgentSpec, Budgets
from stalwart.contracts.run import StepRecord
from stalwart.workers.worker import build_worker
from stalwart.workflows.conversation import FINAL_RESPONSE_PROMPT

SEED_TOOL_MOCK = ['{"tool": "echo", "arguments": {"text": "hello"}}', "{}", "The echo returned: hello"]


# -- parsing ----------------------------------------------------------------------


def test_the_whole_reply_is_tried_as_json_first():
    """seed-behaviours.md: "Parsing tries the whole reply as JSON, then a balanced `{...}` in the text"."""
    reply = '  {"tool": "calculator", "arguments": {"expression": "2 + 2"}}\n'
    assert json_actions.parse_action(reply) == {"tool": "calculator", "arguments": {"expression": "2 + 2"}}


def test_a_balanced_object_is_found_inside_text_even_when_not_on_a_line_of_its_own():
    """seed-behaviours.md: "then a balanced `{...}` in the text" (the seed's own source; its document says
    "Look for JSON on a line by itself", which a balanced object on its own line also is)."""
    reply = 'I will call it: {"tool": "echo", "arguments": {"text": "a } inside a string"}} and wait.'
    [call] = json_actions.read(reply, step=2).tool_calls
    assert (call.name, call.arguments) == ("echo", {"text": "a } inside a string"})
    on_its_line = 'Let me check.\n{"agent": "researcher", "task": "Find quantum info"}\nThanks.'
    assert json_actions.parse_action(on_its_line) == {"agent": "researcher", "task": "Find quantum info"}


def test_nothing_found_means_no_action_even_when_the_reply_tried_to_call_a_tool():
    """seed-behaviours.md: "nothing found means no action" (the seed's `return {}  # No action found`)."""
    for reply in ['{"tool": "echo", "arguments": {"text": "hi"', "Hello! How can I help you?", "{}"]:
        reading = json_actions.read(reply, step=1)
        assert reading.wants_final_answer and not reading.tool_calls and reading.feedback is None, reply


# -- DEBUG_MOCK_RESPONSES -----------------------------------------------------------


async def test_mock_simple_response_answers_with_the_second_reply_for_an_agent_without_tools(
    time_skipping_env, task_queue, monkeypatch
):
    """Seed 000: "# Simple response (no-action -> final)
    export DEBUG_MOCK_RESPONSES='["{}", "Hello! How can I help you?"]'"."""
    monkeypatch.setenv(MOCK_ENV, json.dumps(["{}", "Hello"]))
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(AgentSpec(name="plain"), "Hi")
        result = await run.result()
        prompt = await run.model_input(2)
    assert (result.stop_reason, result.answer) == ("done", "Hello")
    assert [s.content for s in result.steps if s.role == "assistant"] == ["{}", "Hello"]
    assert prompt.messages[-1].content == FINAL_RESPONSE_PROMPT  # "Add "provide your final response" prompt"


async def test_mock_tool_run_takes_action_then_no_action_then_final_text_for_a_native_agent(
    time_skipping_env, task_queue, monkeypatch
):
    """Seed 000: "# Test tool calling (action -> no-action -> final)"; seed-behaviours.md: "A mocked tool run
    therefore takes three responses: action, `{}`, final text" - for every agent, whatever its `action_format`."""
    monkeypatch.setenv(MOCK_ENV, json.dumps(SEED_TOOL_MOCK))
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(AgentSpec(name="native", tools=["echo"]), "Echo hello")
        result = await run.result()
        events = await run.events()
    assert (result.stop_reason, result.answer) == ("done", "The echo returned: hello")
    assert [e.event_type for e in events] == ["user_message", "tool_call", "tool_result", "agent_response"]


async def test_mock_replies_are_streamed_word_by_word_in_phase_two(time_skipping_env, task_queue, monkeypatch):
    """Seed 000: "3. Call model with streaming enabled 4. Stream tokens directly to client"; seed-behaviours.md:
    "Streamed mock replies are split into words"."""
    answer = " ".join(f"word{i}" for i in range(40))
    monkeypatch.setenv(MOCK_ENV, json.dumps(["{}", answer]))
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(AgentSpec(name="plain"), "Talk")
        events = [e async for e in run.stream(poll_interval=0.01)]
    assert all(isinstance(e, AnswerDelta) and e.step == 2 for e in events)
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == answer


# -- progress blocks ----------------------------------------------------------------


def mocked_delegator(max_steps: int = 7) -> AgentSpec:
    helper = {"name": "helper", "spec": {"scripted": [{"text": "helped"}]}}
    return AgentSpec.model_validate(
        {"name": "boss", "tools": ["echo"], "sub_agents": [helper], "budgets": Budgets(max_steps=max_steps)}
    )


DELEGATING_MOCK = [
    '{"tool": "echo", "arguments": {"text": "hello"}}',
    '{"agent": "helper", "task": "help"}',
    "{}",
    "All done.",
]


async def test_a_progress_block_before_each_action_is_an_event_of_the_run(time_skipping_env, task_queue, monkeypatch):
    """seed-behaviours.md: "Progress block before each action: `{"type": "progress", "step": i, "max_steps": N,
    "action": "tool_call" | "delegate", "target": name}`"; seed 000: "1. Parse tool and arguments from JSON action
    2. Emit progress block 3. Log tool_call event to memory"."""
    monkeypatch.setenv(MOCK_ENV, json.dumps(DELEGATING_MOCK))
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(mocked_delegator(), "Echo, then get help")
        result = await run.result()
        events = await run.events(progress=True)
        memory = await run.events()
    assert result.answer == "All done."
    assert [e.event_type for e in events] == [
        "user_message",
        "progress",
        "tool_call",
        "tool_result",
        "progress",
        "delegation_request",
        "delegation_response",
        "agent_response",
    ]
    assert [e.content for e in events if e.event_type == "progress"] == [
        {"type": "progress", "step": 1, "max_steps": 7, "action": "tool_call", "target": "echo"},
        {"type": "progress", "step": 2, "max_steps": 7, "action": "delegate", "target": "helper"},
    ]
    # the memory events stay the seed's list: "[user_message, tool_call, tool_result, agent_response]"
    assert "progress" not in [e.event_type for e in memory]
    assert len({e.event_id for e in events}) == len(events)


async def test_progress_blocks_reach_watch_and_stream_before_their_action(time_skipping_env, task_queue, monkeypatch):
    """Seed 000: "During Phase 1, the agent emits progress blocks when starting tool/delegation execution"."""
    monkeypatch.setenv(MOCK_ENV, json.dumps(DELEGATING_MOCK))
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(mocked_delegator(), "Echo, then get help")
        watched, streamed = await asyncio.gather(
            _collect(run.watch(poll_interval=0.01, progress=True)), _collect(run.stream(0.01, progress=True))
        )
    order = [
        f"progress {e.target}" if isinstance(e, Progress) else f"{e.role} {e.tool_name or ''}".strip() for e in watched
    ]
    assert order == [
        "user",
        "assistant",
        "progress echo",
        "tool echo",
        "assistant",
        "progress helper",
        "tool helper",
        "assistant",
        "assistant",
    ]
    progress = [e.block for e in streamed if isinstance(e, Progress)]
    assert [p["target"] for p in progress] == ["echo", "helper"]
    answer = [e for e in streamed if isinstance(e, AnswerDelta)]
    assert "".join(e.text for e in answer) == "All done." and {e.step for e in answer} == {4}
    assert [type(e).__name__ for e in streamed][:2] == ["Progress", "Progress"]  # both before the answer's text


async def test_the_cli_prints_each_progress_block_before_its_action(time_skipping_env, task_queue, monkeypatch):
    """Seed 000: "Progress Blocks ... {"type": "progress", "step": 1, "action": "tool_call", "target": "calculator"}"
    - `stalwart run` prints each block as the seed emits it, on its own line before the action's line."""
    monkeypatch.setenv(MOCK_ENV, json.dumps(SEED_TOOL_MOCK))
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    out = StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(AgentSpec(name="native", tools=["echo"]), "Echo hello")
        await runs.print_live(run)
    lines = out.getvalue().splitlines()
    block = '[1] progress {"type": "progress", "step": 1, "max_steps": 10, "action": "tool_call", "target": "echo"}'
    assert block in lines
    tool_line = next(i for i, line in enumerate(lines) if line.startswith("[1] tool    echo("))
    assert lines.index(block) < tool_line


async def _collect(events) -> list[StepRecord | Progress | AnswerDelta]:
    return [event async for event in events]
