"""The agent loop's behaviour, one behaviour per test, on the time-skipping Temporal server."""

from __future__ import annotations

import asyncio
import json

from stalwart.activities.tools import ToolContext, tool
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall


def call(name: str, **arguments: object) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, arguments=arguments)


def agent(*replies: ScriptedReply, tools: list[str] | None = None, **budgets: object) -> AgentSpec:
    return AgentSpec(
        name="tester",
        tools=["calculator", "echo"] if tools is None else tools,
        scripted=list(replies),
        budgets=Budgets(**budgets),
    )


@tool
def explode(reason: str) -> str:
    """Always fails, to check that failures reach the model.

    Args:
        reason: Why it fails.
    """
    raise RuntimeError(f"boom: {reason}")


_active = 0
_peak = 0


@tool
async def slow_echo(text: str, delay: float) -> str:
    """Echo after a delay, recording how many calls overlap.

    Args:
        text: What to echo.
        delay: Seconds to wait first.
    """
    global _active, _peak
    _active += 1
    _peak = max(_peak, _active)
    try:
        await asyncio.sleep(delay)
    finally:
        _active -= 1
    return text


seen_keys: list[str] = []


@tool
def remember_key(note: str, context: ToolContext) -> str:
    """Record the idempotency key the loop gives this call.

    Args:
        note: Anything.
    """
    seen_keys.append(context.idempotency_key)
    return note


async def test_run_ends_done_with_the_text_of_a_turn_without_tool_calls(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(agent(ScriptedReply(text="Hello!")), "greet me")
    assert result.stop_reason == "done"
    assert result.answer == "Hello!"
    assert [s.role for s in result.steps] == ["user", "assistant"]
    assert result.steps[-1].final


async def test_tool_results_are_fed_back_to_the_model_before_the_next_turn(stalwart, worker_with):
    spec = agent(ScriptedReply(tool_calls=[call("calculator", expression="6*7")]), ScriptedReply(text="42"))
    async with worker_with():
        handle = await stalwart.start(spec, "compute")
        result = await handle.result()
    tool_step = result.steps[2]
    assert (tool_step.role, tool_step.tool_name, tool_step.arguments, tool_step.result) == (
        "tool",
        "calculator",
        {"expression": "6*7"},
        "42",
    )
    assert tool_step.started_at <= tool_step.ended_at
    assert result.answer == "42"


async def test_max_steps_answers_reached_maximum_reasoning_steps(stalwart, worker_with):
    looping = ScriptedReply(tool_calls=[call("echo", text="again")])
    async with worker_with():
        result = await stalwart.run(agent(looping, looping, looping, max_steps=2), "loop")
    assert result.stop_reason == "max_steps"
    assert result.answer == "Reached maximum reasoning steps (2)"
    assert sum(s.role == "assistant" for s in result.steps) == 2


async def test_finalize_on_budget_makes_one_last_call_without_tools(stalwart, worker_with):
    looping = ScriptedReply(tool_calls=[call("echo", text="again")])
    last = ScriptedReply(text="Best effort: it loops.", tool_calls=[call("echo", text="ignored")])
    async with worker_with():
        result = await stalwart.run(agent(looping, last, max_steps=1, finalize_on_budget=True), "loop")
    assert result.stop_reason == "max_steps"
    assert result.answer == "Best effort: it loops."
    assert [s.role for s in result.steps] == ["user", "assistant", "tool", "assistant"]


async def test_max_tokens_stops_once_cumulative_tokens_reach_the_budget(stalwart, worker_with):
    costly = ScriptedReply(tool_calls=[call("echo", text="x")], input_tokens=60, output_tokens=40)
    async with worker_with():
        result = await stalwart.run(agent(costly, costly, costly, max_tokens=150), "spend")
    assert result.stop_reason == "max_tokens"
    assert result.usage.total_tokens == 200
    assert result.answer == ""


async def test_a_failing_tool_is_fed_back_as_an_error_with_a_hint(stalwart, worker_with):
    spec = agent(
        ScriptedReply(tool_calls=[call("explode", reason="testing")]),
        ScriptedReply(text="The tool failed."),
        tools=["explode"],
    )
    async with worker_with(explode):
        result = await stalwart.run(spec, "try")
    assert result.stop_reason == "done"
    error = json.loads(result.steps[2].error)
    assert error == {"error": "RuntimeError: boom: testing", "hint": "Check argument names and types and try again."}


async def test_an_unknown_tool_is_fed_back_with_the_available_tools(stalwart, worker_with):
    spec = agent(ScriptedReply(tool_calls=[call("teleport", to="mars")]), ScriptedReply(text="ok"))
    async with worker_with():
        result = await stalwart.run(spec, "go")
    error = json.loads(result.steps[2].error)
    assert error["error"] == "Unknown tool: teleport"
    assert "calculator, echo" in error["hint"]
    assert result.stop_reason == "done"


async def test_wrong_argument_names_are_fed_back_not_run(stalwart, worker_with):
    spec = agent(ScriptedReply(tool_calls=[call("calculator", expr="1+1")]), ScriptedReply(text="ok"))
    async with worker_with():
        result = await stalwart.run(spec, "go")
    error = json.loads(result.steps[2].error)["error"]
    assert "unexpected argument 'expr'" in error and "missing required argument 'expression'" in error


async def test_parallel_tool_calls_keep_call_order_and_respect_max_parallel_tools(stalwart, worker_with):
    global _peak
    _peak = 0
    delays = [0.4, 0.1, 0.3, 0.05, 0.2]
    spec = agent(
        ScriptedReply(tool_calls=[call("slow_echo", text=f"r{i}", delay=d) for i, d in enumerate(delays)]),
        ScriptedReply(text="done"),
        tools=["slow_echo"],
        max_parallel_tools=2,
    )
    async with worker_with(slow_echo):
        result = await stalwart.run(spec, "fan out")
    assert [s.result for s in result.steps if s.role == "tool"] == ["r0", "r1", "r2", "r3", "r4"]
    assert _peak == 2


async def test_each_tool_call_gets_an_idempotency_key_of_run_and_call(stalwart, worker_with):
    seen_keys.clear()
    spec = agent(
        ScriptedReply(tool_calls=[call("remember_key", note="a")]), ScriptedReply(text="ok"), tools=["remember_key"]
    )
    async with worker_with(remember_key):
        handle = await stalwart.start(spec, "go")
        await handle.result()
    [key] = seen_keys
    workflow_id, chain_id, step_and_call = key.split("/", 2)
    assert (workflow_id, step_and_call) == (handle.run_id, "1/call_1_1") and chain_id


async def test_a_model_that_fails_for_good_ends_the_run_with_error_and_keeps_its_steps(stalwart, worker_with):
    spec = agent(ScriptedReply(tool_calls=[call("echo", text="one")]))  # no reply scripted for call 2
    async with worker_with():
        result = await stalwart.run(spec, "go")
    assert result.stop_reason == "error"
    assert "no reply for model call 2" in result.error
    assert [s.role for s in result.steps] == ["user", "assistant", "tool", "assistant"]
    assert result.steps[2].result == "one"


async def test_an_agent_listing_an_unregistered_tool_ends_with_an_error_naming_the_fix(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(agent(ScriptedReply(text="hi"), tools=["nonexistent"]), "go")
    assert result.stop_reason == "error"
    assert "nonexistent" in result.error and "stalwart worker --tools" in result.error


async def test_events_use_the_kaos_vocabulary(stalwart, worker_with):
    spec = agent(
        ScriptedReply(tool_calls=[call("echo", text="hello"), call("explode", reason="x")]),
        ScriptedReply(text="The echo returned: hello"),
        tools=["echo", "explode"],
    )
    async with worker_with(explode):
        handle = await stalwart.start(spec, "echo hello")
        await handle.result()
        events = await handle.events()
    assert [e.event_type for e in events] == [
        "user_message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_error",
        "agent_response",
    ]
    assert events[-1].content == "The echo returned: hello"


async def test_a_repeated_identical_read_only_call_returns_the_earlier_result_with_a_note(stalwart, worker_with):
    same = ScriptedReply(tool_calls=[call("calculator", expression="2+2")])
    async with worker_with():
        result = await stalwart.run(agent(same, same, ScriptedReply(text="4")), "add")
    first, second = [s.result for s in result.steps if s.role == "tool"]
    assert first == "4"
    assert second.startswith("4\n\n(Note: you already called this tool with these arguments at step 1")


counted: list[str] = []


@tool(side_effecting=True)
def send_note(text: str) -> str:
    """Send a note (a side effect, so never deduplicated by the loop).

    Args:
        text: The note.
    """
    counted.append(text)
    return "sent"


async def test_the_thrash_guard_never_skips_a_side_effecting_tool(stalwart, worker_with):
    counted.clear()
    same = ScriptedReply(tool_calls=[call("send_note", text="hi")])
    async with worker_with(send_note):
        result = await stalwart.run(agent(same, same, ScriptedReply(text="ok"), tools=["send_note"]), "notify")
    assert counted == ["hi", "hi"]
    assert [s.result for s in result.steps if s.role == "tool"] == ["sent", "sent"]
