"""Spans and metrics recorded by the agent workflow, replay-safe, at no cost when they are off.

Spans follow the OpenTelemetry GenAI semantic conventions: `invoke_agent {agent}` for a run (and for each
turn of a session, inside a `session {agent}` span), `execute_tool {tool}` for each tool call, so a sub-agent's
run (a child workflow) and an A2A delegation nest under the call that made them. The model calls'
`chat {model}` spans are made by the model activity. Seed 004 names the model span `execute`; Stalwart names
it `chat {model}`, as the GenAI conventions do.

Workflow code imports nothing but the SDK, so the worker lends it a span factory through the SDK's extern
functions (`stalwart.workers.telemetry`), which starts spans on the replay-safe tracer provider of
`temporalio.contrib.opentelemetry`: on replay a span keeps its ids and is not exported again. Without tracing
the factory is absent and `span` is a no-op.

Metrics go through `workflow.metric_meter()`, which records nothing while the workflow replays, so a run is
counted once however often its history is replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from temporalio import workflow

SPAN_FUNCTION = "stalwart.telemetry.workflow_span"
"""The extern function the worker registers when tracing is on (`stalwart.workers.telemetry`)."""

Attribute = str | bool | int | float | list[str]
PROVIDER_NAMES = {"openai-responses": "openai", "scripted": "stalwart.scripted"}
"""Stalwart's provider prefixes as `gen_ai.provider.name` values (the others are the same)."""


class Span(Protocol):
    def set_attributes(self, attributes: Mapping[str, Attribute]) -> None: ...

    def error(self, kind: str, message: str) -> None: ...


class _NoSpan:
    def set_attributes(self, attributes: Mapping[str, Attribute]) -> None:
        pass

    def error(self, kind: str, message: str) -> None:
        pass


NO_SPAN = _NoSpan()


_NOT_TRACED: AbstractContextManager[Span] = nullcontext(NO_SPAN)
"""The block's context when the worker does not trace: it does nothing, so one serves every block."""


def span(
    name: str, attributes: Mapping[str, Attribute], *, ends_on: tuple[type[BaseException], ...] = ()
) -> AbstractContextManager[Span]:
    """A span around the block when the worker traces, else nothing.

    `ends_on`: exceptions that end the span normally (control flow such as continue-as-new); any other
    exception that is not a workflow failure leaves it open, as a failed workflow task is retried.
    """
    start = workflow.extern_functions().get(SPAN_FUNCTION)
    if start is None:
        return _NOT_TRACED
    return start(name, dict(attributes), ends_on)


def turn_span(
    agent: str, model: str, number: int, *, session: bool, ends_on: tuple[type[BaseException], ...]
) -> AbstractContextManager[Span]:
    """A session's turn as an `invoke_agent` span of its own, inside the session's span; a plain run's one turn
    is the run's own span, so it gets none."""
    if not session:
        return _NOT_TRACED
    attributes = agent_attributes(agent, model, conversation_id=workflow.info().workflow_id)
    return span(f"invoke_agent {agent}", {**attributes, "stalwart.turn": number}, ends_on=ends_on)


def _count(name: str, description: str, attributes: Mapping[str, str], value: int = 1) -> None:
    counter = workflow.metric_meter().create_counter(name, description)
    counter.add(value, dict(attributes))


def run_started(agent: str, *, session: bool) -> None:
    _count(
        "stalwart_runs_started_total",
        "Agent runs and sessions started (a continued-as-new run is not counted again)",
        {"agent": agent, "kind": "session" if session else "run"},
    )


def run_finished(agent: str, stop_reason: str, *, session: bool) -> None:
    _count(
        "stalwart_runs_finished_total",
        "Agent runs and sessions finished, by stop reason",
        {"agent": agent, "stop_reason": stop_reason, "kind": "session" if session else "run"},
    )


def approval_requested(agent: str, tool: str) -> None:
    _count(
        "stalwart_approvals_requested_total", "Tool calls held for a person's approval", {"agent": agent, "tool": tool}
    )


def agent_attributes(agent: str, model: str, *, conversation_id: str | None = None) -> dict[str, Attribute]:
    """The `invoke_agent` span's GenAI attributes."""
    prefix, _, name = model.partition(":")
    attributes: dict[str, Attribute] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "stalwart.model": model,
        "stalwart.workflow_id": workflow.info().workflow_id,
        "stalwart.run_id": workflow.info().run_id,
    }
    if model != "auto":  # `auto` is resolved by each worker's keys: its `chat` spans say which model answered
        attributes["gen_ai.provider.name"] = PROVIDER_NAMES.get(prefix, prefix)
        attributes["gen_ai.request.model"] = name or prefix
    if conversation_id is not None:
        attributes["gen_ai.conversation.id"] = conversation_id
    return attributes


def tool_attributes(name: str, call_id: str, kind: str, step: int) -> dict[str, Attribute]:
    """The `execute_tool` span's GenAI attributes."""
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "extension" if kind in ("mcp", "a2a") else "function",
        "stalwart.tool.kind": kind,
        "stalwart.step": step,
    }


def outcome_attributes(
    stop_reason: str, steps: int, input_tokens: int, output_tokens: int, cost_usd: float
) -> dict[str, Attribute]:
    """What a run or turn spent and why it stopped, set when its span ends."""
    return {
        "stalwart.stop_reason": stop_reason,
        "stalwart.steps": steps,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "stalwart.cost_usd": cost_usd,
    }
