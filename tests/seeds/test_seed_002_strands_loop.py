"""Seed 002, the Strands event loop: conversation manager, end-of-run metrics, a callback handler for events.

Each test quotes the line of `../shared/reference/seeds/002_99e1592fb2498575.txt` it checks.
"""

from __future__ import annotations

import asyncio
import sys
from io import StringIO

from stalwart.activities.context_window import SUMMARY_HEADER, SUMMARY_INSTRUCTIONS, estimated_tokens
from stalwart.activities.tools import tool
from stalwart.client import cli
from stalwart.client.commands import connecting, inspecting
from stalwart.contracts.activities import ModelRequest
from stalwart.contracts.agent import AgentSpec, Budgets, ContextSettings, ScriptedReply, ScriptedToolCall
from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.run import RunEvent


def calls(*names: str, text: str = "") -> ScriptedReply:
    return ScriptedReply(text=text, tool_calls=[ScriptedToolCall(name=n, arguments={"text": f"{n}"}) for n in names])


@tool
def bulky(text: str) -> str:
    """Return a long text, to fill the model's window.

    Args:
        text: A label for the text.
    """
    return f"{text}: " + "b" * 2000


@tool
def flaky(text: str) -> str:
    """Always fails.

    Args:
        text: Ignored.
    """
    raise RuntimeError("flaky failed")


released = asyncio.Event()


@tool
async def gated(text: str) -> str:
    """Returns once the test lets it, so the test can see events of a run that is still going.

    Args:
        text: What to return.
    """
    await released.wait()
    return text


async def test_the_sliding_window_bounds_what_a_run_longer_than_the_window_sends(stalwart, worker_with):
    """Seed 002: "Calling the agent adds the message to conversation history and applies conversation management
    strategies before initializing a new event loop cycle" - the sliding window, on by default."""
    spec = AgentSpec(
        name="long",
        tools=["bulky"],
        scripted=[*(calls("bulky") for _ in range(12)), ScriptedReply(text="Done.")],
        budgets=Budgets(max_steps=20),
        context=ContextSettings(max_input_tokens=2000),
        thrash_guard=False,
    )
    assert spec.context.strategy == "sliding_window"
    async with worker_with(bulky):
        run = await stalwart.start(spec, "Fill the window")
        result = await run.result()
        last = await run.model_input(13)
        first = await run.model_input(2)
    assert result.answer == "Done."
    assert sum(estimated_tokens(m) for m in last.messages) <= 2000  # twelve results of 500 tokens would not fit
    assert last.messages[0].content == "Fill the window"  # the goal is kept
    assert last.messages[1].role == "assistant"  # never a tool result whose call was dropped
    assert len(last.messages) < 1 + 2 * 12 and len(first.messages) == 3


async def test_metrics_at_the_end_of_a_run_count_cycles_tokens_and_latency_per_tool(stalwart, worker_with):
    """Seed 002: "Collects metrics and traces for observability" ... "At completion, metrics and traces are
    collected"; seed-behaviours.md: "The loop records metrics (cycles, tokens, latency per tool)"."""
    spec = AgentSpec(
        name="measured",
        tools=["echo", "flaky"],
        scripted=[calls("echo", "flaky"), calls("echo", text="again"), ScriptedReply(text="Done.")],
    )
    async with worker_with(flaky):
        run = await stalwart.start(spec, "Measure")
        result = await run.result()
        state = await run.state()
    metrics = result.metrics
    assert metrics is not None
    assert metrics.cycles == 3 and (metrics.input_tokens, metrics.output_tokens, metrics.total_tokens) == (30, 30, 60)
    assert (metrics.tools["echo"].calls, metrics.tools["echo"].successes, metrics.tools["echo"].errors) == (2, 2, 0)
    assert (metrics.tools["flaky"].calls, metrics.tools["flaky"].errors) == (1, 1)
    assert metrics.tool_calls == 3
    assert metrics.tool_seconds == sum(t.total_seconds for t in metrics.tools.values())
    assert metrics.elapsed_seconds == result.elapsed_seconds and metrics.model_seconds <= metrics.elapsed_seconds
    assert state.metrics == metrics  # what `stalwart show` prints


async def test_stalwart_show_prints_the_metrics(stalwart, worker_with, monkeypatch):
    """Seed 002's metrics (cycles, tokens, latency per tool, totals) in `stalwart show`."""
    spec = AgentSpec(name="shown", tools=["echo"], scripted=[calls("echo"), ScriptedReply(text="Done.")])
    async with worker_with():
        run = await stalwart.start(spec, "Show me")
        await run.result()
    out = StringIO()
    monkeypatch.setattr(sys, "stdout", out)

    async def reading(args: object, run_id: str) -> object:  # the run, read through this test's client
        return stalwart.get(run_id)

    monkeypatch.setattr(connecting, "reader", reading)
    parsed = cli._parser().parse_args(["show", run.run_id])
    assert await inspecting.show(parsed) == 0
    text = out.getvalue()
    assert "metrics: 2 cycles · 40 tokens (20 in / 20 out)" in text
    assert "  tool echo: 1 call (1 ok, 0 failed)" in text


async def test_a_callback_gets_every_event_as_it_happens_in_order_with_ids(stalwart, worker_with):
    """Seed 002: "a callback handler receives events as they happen" (seed-behaviours.md), the event loop's
    `callback_handler`; issue 12: "every event of the run as it happens, in order, at least once, with an id"."""
    released.clear()
    spec = AgentSpec(name="followed", tools=["gated"], scripted=[calls("gated"), ScriptedReply(text="Done.")])
    seen: list[RunEvent] = []

    def handler(event: RunEvent) -> None:
        seen.append(event)
        if event.event_type == "tool_call":
            released.set()  # the run can only go on once this callback has seen its tool call

    async with worker_with(gated):
        run = await stalwart.start(spec, "Follow me")
        result = await run.follow(handler, poll_interval=0.01)
        recorded = await run.events(progress=True)
        again: list[RunEvent] = []
        await run.follow(again.append, skip=[e.event_id for e in seen[:2]])
    assert result.answer == "Done."
    assert [e.event_type for e in seen] == ["user_message", "progress", "tool_call", "tool_result", "agent_response"]
    assert [e.event_id for e in seen] == [e.event_id for e in recorded]  # each once, ids as the run records them
    assert [e.event_id for e in again] == [e.event_id for e in seen[2:]]  # followed again: same ids, skip honoured


async def test_an_async_callback_is_awaited(stalwart, worker_with):
    """The callback may be a coroutine function, as a Strands callback handler may do I/O."""
    spec = AgentSpec(name="awaited", scripted=[ScriptedReply(text="Hi.")])
    types: list[str] = []

    async def handler(event: RunEvent) -> None:
        await asyncio.sleep(0)
        types.append(event.event_type)

    async with worker_with():
        run = await stalwart.start(spec, "Hello")
        await run.follow(handler)
    assert types == ["user_message", "agent_response"]


def noting_bulky() -> ScriptedReply:
    """A reply that calls `bulky`; as the reply to a summary call, its text is the summary."""
    return ScriptedReply(
        text="Noted: the bulky results so far.",
        tool_calls=[ScriptedToolCall(name="bulky", arguments={"text": "bulky"})],
    )


async def test_summarize_replaces_older_messages_by_a_summary_the_model_writes(stalwart, worker_with):
    """Seed 003: "Summarize-and-replace. When history exceeds a threshold, ask the model to summarize the older
    turns into a single 'scratchpad' message, replace those turns with the summary"; seed 002: "applies
    conversation management strategies before initializing a new event loop cycle"."""
    spec = AgentSpec(
        name="summarizing",
        tools=["bulky"],
        scripted=[*(noting_bulky() for _ in range(9)), ScriptedReply(text="Done.")],
        budgets=Budgets(max_steps=30),
        context=ContextSettings(strategy="summarize", max_input_tokens=1000),
        thrash_guard=False,
    )
    async with worker_with(bulky):
        run = await stalwart.start(spec, "Fill the window")
        result = await run.result()
        inputs = {s.step: await run.model_input(s.step) for s in result.steps if s.role == "assistant"}
        history = await run.history()
    assert result.answer == "Done."
    summaries = [s.step for s in result.steps if s.role == "assistant" and s.summary]
    assert len(summaries) >= 2, "a run this long overflows its window more than once"
    for step, sent in inputs.items():
        if step in summaries:  # the summary call: the older messages, as text, to a model told to summarise
            assert sent.tools == [] and "result of bulky: bulky: bbbb" in sent.messages[0].content
            assert sent.agent.instructions == SUMMARY_INSTRUCTIONS
            continue
        assert sum(estimated_tokens(m) for m in sent.messages) <= 1000
        assert sent.messages[0].content == "Fill the window"
        if step > summaries[0]:
            assert sent.messages[1].content.startswith(SUMMARY_HEADER + "Noted: the bulky results so far.")
    # the summary is the result of a model activity of its own: durable, replayed, never asked for twice
    requests = [
        (await stalwart.temporal.data_converter.decode(list(a.input.payloads), [ModelRequest]))[0]
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and (a := e.activity_task_scheduled_event_attributes).activity_type.name == MODEL_ACTIVITY
    ]
    assert [r.step for r in requests if r.summarize] == summaries
    assert result.metrics is not None and result.metrics.cycles == len(inputs)


async def test_summary_steps_do_not_count_against_max_steps(stalwart, worker_with):
    """Seed 002/003: the conversation manager is not a loop cycle of its own reasoning: a summary call is not one
    of the agent's `max_steps` (its tokens count)."""
    spec = AgentSpec(
        name="summarizing",
        tools=["bulky"],
        scripted=[*(noting_bulky() for _ in range(5)), ScriptedReply(text="Done.")],
        budgets=Budgets(max_steps=4),
        context=ContextSettings(strategy="summarize", max_input_tokens=1000),
        thrash_guard=False,
    )
    async with worker_with(bulky):
        result = await stalwart.run(spec, "Fill the window")
    summaries = [s for s in result.steps if s.role == "assistant" and s.summary]
    reasoning = [s for s in result.steps if s.role == "assistant" and not s.summary]
    assert summaries and len(reasoning) == 4 and result.stop_reason == "max_steps"
    assert result.usage.total_tokens == 20 * (len(summaries) + len(reasoning))
