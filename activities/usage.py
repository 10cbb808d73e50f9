"""Token usage as a budget can trust it: never negative, and estimated when the provider reported none.

A provider (most often an OpenAI-compatible server) may send no usage at all, or zeros, or nonsense
such as negative counts. Trusted blindly, missing usage lets a `max_tokens` budget never fire and
negative usage lowers the run's totals. So a negative count is replaced by an estimate, a missing one
is estimated (about `CHARS_PER_TOKEN` characters a token, from what was sent and what came back),
and the usage says so (`Usage.estimated`), which the run's result and `stalwart show` report.

The tokens a provider reported for an attempt that then failed (an error event or a cut after Anthropic's
`message_start`) were billed all the same: the model activity counts them into the turn that finally succeeds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import MAX_TOKENS
from stalwart.contracts.messages import AssistantTurn, Usage

CHARS_PER_TOKEN = 4


def unreported(usage: Usage | None) -> Usage:
    """What a provider builds its turn with: the usage it reported, or a marker that it reported none
    (no usage at all, or zero tokens both ways, which no real model call costs)."""
    if usage is None or (usage.input_tokens == 0 and usage.output_tokens == 0):
        return Usage(estimated=True)
    if usage.input_tokens == 0:  # every call reads its prompt: a zero is a count the provider left out
        return usage.model_copy(update={"input_tokens": -1})
    return usage


def settle(usage: Usage, context: ModelContext, turn: AssistantTurn) -> Usage:
    """`usage` with negative counts clamped to estimates and unreported ones estimated; `estimated` says if any was."""
    missing = usage.estimated
    input_tokens, output_tokens, estimated = usage.input_tokens, usage.output_tokens, False
    # Counts past MAX_TOKENS are nonsense too, and would overflow the run's int64 `AgentTokens` search attribute.
    if missing or not 0 <= input_tokens <= MAX_TOKENS:
        input_tokens, estimated = estimate_input(context), True
    if missing or not 0 <= output_tokens <= MAX_TOKENS:
        output_tokens, estimated = estimate_output(turn), True
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=min(max(usage.cached_tokens, 0), input_tokens),
        cost_usd=max(usage.cost_usd, 0.0),
        estimated=estimated,
    )


def estimate_input(context: ModelContext) -> int:
    """About how many tokens the request carried: instructions, tool schemas and the conversation."""
    chars = len(context.agent.instructions)
    chars += sum(len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters)) for tool in context.tools)
    for message in context.messages:
        chars += len(message.content)
        chars += sum(len(call.name) + len(json.dumps(call.arguments)) for call in message.tool_calls)
        chars += sum(len(result.for_model()) for result in message.tool_results)
    return _tokens(chars)


def estimate_output(turn: AssistantTurn) -> int:
    """About how many tokens the model wrote: its text and its tool calls."""
    chars = len(turn.text) + sum(len(call.name) + len(json.dumps(call.arguments)) for call in turn.tool_calls)
    return _tokens(chars)


def _tokens(chars: int) -> int:
    return max(1, -(-chars // CHARS_PER_TOKEN))


_REPORTED: ContextVar[list[Usage] | None] = ContextVar("stalwart_reported_usage", default=None)


@contextmanager
def metered() -> Iterator[list[Usage]]:
    """Collect what the provider reports of one model call's usage while it streams (`reported`): an attempt that
    then fails has still been billed for what the provider read (Anthropic reports its input tokens first)."""
    box: list[Usage] = []
    token = _REPORTED.set(box)
    try:
        yield box
    finally:
        _REPORTED.reset(token)


def reported(usage: Usage) -> None:
    """The usage the provider has reported so far of the call being made; a later report replaces an earlier one."""
    box = _REPORTED.get()
    if box is not None:
        box[:] = [usage]


def of_failed_attempt(box: list[Usage]) -> Usage:
    """What a failed attempt counts: the tokens the provider reported before it failed, none negative or past
    MAX_TOKENS; nothing is estimated, as no answer came back to estimate from."""
    if not box:
        return Usage()
    [usage] = box
    input_tokens = min(max(usage.input_tokens, 0), MAX_TOKENS)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=min(max(usage.output_tokens, 0), MAX_TOKENS),
        cached_tokens=min(max(usage.cached_tokens, 0), input_tokens),
    )
