"""Spans and metrics of the model and tool activities.

Each model call is a `chat {model}` span (OpenTelemetry GenAI semantic conventions: `gen_ai.provider.name`,
`gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.usage.input_tokens` and `output_tokens`,
`gen_ai.response.finish_reasons`), a child of the run's `invoke_agent` span through the trace context
Temporal carries in the activity's headers. Seed 004 calls this span `execute`. It is made only when the
worker traces (`stalwart.workers.telemetry.enable_tracing`); otherwise OpenTelemetry is never imported.

Metrics go through the SDK's activity metric meter, once per completed attempt (an activity is not replayed):
`stalwart_steps_total`, `stalwart_input_tokens_total`, `stalwart_output_tokens_total`, `stalwart_model_cost_usd`
(a histogram: its `_sum` is the dollars spent), `stalwart_model_latency_seconds`, `stalwart_tool_latency_seconds`,
`stalwart_tool_errors_total`. A worker whose runtime serves no metrics drops them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from temporalio import activity

from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import AssistantTurn, ToolResult

TRACER_NAME = "stalwart"
PROVIDER_NAMES = {"openai-responses": "openai", "scripted": "stalwart.scripted"}
"""Stalwart's provider prefixes as `gen_ai.provider.name` values (the others are the same); the workflow's
spans use the same table (`stalwart.workflows.telemetry`)."""

_tracing = False


def enable_tracing() -> None:
    global _tracing
    _tracing = True


def disable_tracing() -> None:
    global _tracing
    _tracing = False


def tracing() -> bool:
    return _tracing


def provider_and_model(model: str) -> tuple[str, str]:
    """`openai:gpt-4.1-mini` -> (`openai`, `gpt-4.1-mini`); `scripted` -> (`stalwart.scripted`, `scripted`)."""
    prefix, _, name = model.partition(":")
    return PROVIDER_NAMES.get(prefix, prefix), name or prefix


class ModelCall:
    """What one model call observed: set by the model activity as it learns the agent and the reply."""

    def __init__(self, step: int, span: Any) -> None:
        self.step = step
        self._span = span
        self.agent_name = ""
        self.provider = ""
        self.model = ""

    def agent(self, agent: AgentSpec) -> None:
        self.agent_name = agent.name
        self.provider, self.model = provider_and_model(agent.model)
        if self._span is not None:
            self._span.update_name(f"chat {self.model}")
            self._span.set_attributes(
                {
                    "gen_ai.provider.name": self.provider,
                    "gen_ai.system": self.provider,
                    "gen_ai.request.model": self.model,
                    "gen_ai.agent.name": agent.name,
                }
            )
            if agent.max_output_tokens:
                self._span.set_attribute("gen_ai.request.max_tokens", agent.max_output_tokens)
            if agent.temperature is not None:
                self._span.set_attribute("gen_ai.request.temperature", agent.temperature)

    def turn(self, turn: AssistantTurn) -> AssistantTurn:
        usage = turn.usage
        labels = {"agent": self.agent_name, "provider": self.provider, "model": self.model}
        meter = activity.metric_meter()
        meter.create_counter("stalwart_steps_total", "Model calls completed (steps)").add(1, labels)
        meter.create_counter("stalwart_input_tokens_total", "Input tokens of completed model calls", "tokens").add(
            max(usage.input_tokens, 0), labels
        )
        meter.create_counter("stalwart_output_tokens_total", "Output tokens of completed model calls", "tokens").add(
            max(usage.output_tokens, 0), labels
        )
        meter.create_histogram_float(
            "stalwart_model_cost_usd", "Cost of each completed model call in USD (the sum is the total spent)", "USD"
        ).record(max(usage.cost_usd, 0.0), labels)
        if self._span is not None:
            attributes: dict[str, Any] = {
                "gen_ai.response.model": turn.model or self.model,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "stalwart.cost_usd": usage.cost_usd,
                "stalwart.tool_calls": len(turn.tool_calls),
            }
            if turn.stop_reason:
                attributes["gen_ai.response.finish_reasons"] = [turn.stop_reason]
            if usage.estimated:
                attributes["stalwart.usage_estimated"] = True
            self._span.set_attributes(attributes)
        return turn


@contextmanager
def model_call(step: int) -> Iterator[ModelCall]:
    """Observe one attempt of the model activity: its `chat` span (when tracing) and its latency."""
    span = _start_span("chat", {"gen_ai.operation.name": "chat", "stalwart.step": step}, client=True)
    call = ModelCall(step, span)
    started = time.monotonic()
    outcome = "ok"
    try:
        with _current(span):
            yield call
    except BaseException as err:
        outcome = _outcome(err)
        _fail(span, err)
        raise
    finally:
        labels = {"agent": call.agent_name, "provider": call.provider, "model": call.model, "outcome": outcome}
        activity.metric_meter().create_histogram_float(
            "stalwart_model_latency_seconds", "Duration of model call attempts", "s"
        ).record(time.monotonic() - started, labels)
        if span is not None:
            span.end()


class ToolCall:
    def __init__(self, name: str) -> None:
        self.name = name
        self.failed = False

    def result(self, result: ToolResult) -> ToolResult:
        self.failed = result.is_error
        return result


@contextmanager
def tool_call(name: str, kind: str) -> Iterator[ToolCall]:
    """Observe one attempt of the tool activity: its latency, and an error when it fails or returns one.

    Its span, `execute_tool {name}`, is the workflow's: one per call, however many attempts it takes."""
    call = ToolCall(name)
    started = time.monotonic()
    outcome = "ok"
    try:
        yield call
        if call.failed:
            outcome = "error"
    except BaseException as err:
        outcome = _outcome(err)
        raise
    finally:
        meter = activity.metric_meter()
        meter.create_histogram_float("stalwart_tool_latency_seconds", "Duration of tool call attempts", "s").record(
            time.monotonic() - started, {"tool": name, "kind": kind, "outcome": outcome}
        )
        if outcome == "error":
            meter.create_counter("stalwart_tool_errors_total", "Tool call attempts that failed").add(
                1, {"tool": name, "kind": kind}
            )


def _outcome(err: BaseException) -> str:
    return "cancelled" if isinstance(err, asyncio.CancelledError) else "error"


def _start_span(name: str, attributes: dict[str, Any], *, client: bool = False) -> Any:
    if not _tracing:
        return None
    from opentelemetry import trace

    kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
    return trace.get_tracer(TRACER_NAME).start_span(name, kind=kind, attributes=attributes)


@contextmanager
def _current(span: Any) -> Iterator[None]:
    if span is None:
        yield
        return
    from opentelemetry import trace

    with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        yield


def _fail(span: Any, err: BaseException) -> None:
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    kind = getattr(err, "type", None)  # an ApplicationError names the error it carries (ModelUnavailableError ...)
    span.set_attribute("error.type", kind if isinstance(kind, str) and kind else type(err).__name__)
    span.set_status(Status(StatusCode.ERROR, str(err)[:500]))


class RemoteCall:
    def __init__(self, span: Any) -> None:
        self._span = span

    def result(self, agent_name: str, state: str, task_id: str | None) -> None:
        if self._span is not None:
            self._span.update_name(f"invoke_agent {agent_name}")
            self._span.set_attributes({"gen_ai.agent.name": agent_name, "stalwart.a2a.state": state})
            if task_id:
                self._span.set_attribute("stalwart.a2a.task_id", task_id)


@contextmanager
def remote_agent(url: str) -> Iterator[RemoteCall]:
    """One attempt to delegate to an A2A agent: an `invoke_agent` client span (named by the agent's card once it
    answers); `trace_headers()` inside it carries the trace to the agent, so a Stalwart A2A server that traces
    puts its run under this span."""
    host = urlsplit(url).hostname or url
    span = _start_span(
        f"invoke_agent {host}",
        {"gen_ai.operation.name": "invoke_agent", "server.address": host, "url.full": url},
        client=True,
    )
    try:
        with _current(span):
            yield RemoteCall(span)
    except BaseException as err:
        _fail(span, err)
        raise
    finally:
        if span is not None:
            span.end()


def trace_headers() -> dict[str, str]:
    """W3C trace context headers (`traceparent`) of the current span, for an outgoing request; none when off."""
    if not _tracing:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


@contextmanager
def incoming_trace(headers: Any) -> Iterator[None]:
    """Make the trace context of an incoming request (its `traceparent`) current, when this process traces."""
    if not _tracing or "traceparent" not in headers:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(dict(headers)))
    try:
        yield
    finally:
        context.detach(token)
