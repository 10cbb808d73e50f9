"""Anthropic Messages.

Wire format (Prompty §9.4): the assistant's content blocks (text, tool_use,
thinking with its signature) are kept whole and sent back verbatim; all
`tool_result` blocks of a turn go back in one user message.
"""

from __future__ import annotations

from typing import Any, Literal

import anthropic

from stalwart.activities.providers import errors, structured, tool_arguments
from stalwart.activities.providers.calling import Endpoint, streamed_turn
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.streaming import TurnObserver
from stalwart.activities.usage import reported, unreported
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import OutputSpec
from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, Usage

RAW_KEY = "anthropic"
_REBUILT = {"text", "tool_use"}
"""Blocks rebuilt from the turn's text and calls; a turn with others (signed thinking) keeps its blocks, in history
once."""
DEFAULT_MAX_TOKENS = 8192
"""Anthropic requires max_tokens; used when the agent sets no `max_output_tokens`."""


class AnthropicProvider:
    """Streams one message and folds its events into an AssistantTurn."""

    streaming: Literal[True] = True

    def __init__(self, clients: SdkClients, endpoint: Endpoint = Endpoint("anthropic", "ANTHROPIC_API_KEY")) -> None:
        self.endpoint = endpoint
        self.clients = clients

    async def complete(self, context: ModelContext, observer: TurnObserver) -> AssistantTurn:
        turn = await streamed_turn(
            self.endpoint,
            context.agent,
            self.clients,
            anthropic.AsyncAnthropic,
            lambda model: self.request(context, model),
            lambda client, body: client.messages.create(**body),
            lambda events, model, target: _fold(events, observer, model, target),
        )
        output = structured.asked(context)
        return structured.answered(output, turn, final_tool=output is not None and _final_tool_used(output))

    def request(self, context: ModelContext, model: str) -> dict[str, Any]:
        """The keyword arguments of `messages.create`.

        Unlike the openai SDK's, the anthropic SDK's `create` sends its body without a typed transform (its one walk
        of the body, a copy that reads file inputs, runs for every request, `post` too), and it names the request's
        tracing span, which `post` would not: the request goes through `create`."""
        agent = context.agent
        request: dict[str, Any] = {
            "model": model,
            "system": agent.instructions + structured.prompted(context),
            "messages": anthropic_messages(context),
            "max_tokens": agent.max_output_tokens or DEFAULT_MAX_TOKENS,
            "stream": True,
        }
        if agent.temperature is not None:  # gone from the SDK's signature (1.0), still taken by older models
            request["extra_body"] = {"temperature": min(agent.temperature, 1.0)}
        if context.tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in context.tools
            ]
            request["tool_choice"] = {"type": "auto" if context.tools_enabled else "none"}
        if (output := structured.asked(context)) is not None:  # typed output
            _ask_for_output(request, output, offers_tools=bool(context.tools) and context.tools_enabled)
        return request


def _output_format(output: OutputSpec) -> dict[str, Any] | None:
    """The `output_config.format` of Anthropic's structured output: the schema as the SDK's own `transform_schema`
    rewrites it (constraints it cannot enforce move into descriptions); None for a schema it cannot take (no
    `type`), which the final-answer tool asks for instead."""
    try:
        return {"type": "json_schema", "schema": anthropic.transform_schema(structured.sent_schema(output))}
    except (ValueError, TypeError, KeyError):
        return None


def _final_tool_used(output: OutputSpec) -> bool:
    return _output_format(output) is None


def _ask_for_output(request: dict[str, Any], output: OutputSpec, *, offers_tools: bool) -> None:
    """Anthropic's structured output; for a schema it cannot take, the final-answer tool: forced when it is the
    only tool offered, else offered beside the others for the model to call when it has the answer."""
    form = _output_format(output)
    if form is not None:
        request["output_config"] = {"format": form}
        return
    final = structured.final_tool(output)
    if offers_tools:
        request["tools"] = [*request["tools"], final]
    else:
        request["tools"] = [final]
        request["tool_choice"] = {"type": "tool", "name": output.name}


def anthropic_messages(context: ModelContext) -> list[dict[str, Any]]:
    """The conversation as Messages: consecutive messages of one role merge, as the API requires alternation."""
    out: list[dict[str, Any]] = []
    for message in context.messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"] = [*out[-1]["content"], *blocks]
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        return "user", [
            {"type": "tool_result", "tool_use_id": r.call_id, "content": r.for_model(), "is_error": r.is_error}
            for r in message.tool_results
        ]
    if message.role == "assistant":
        raw = message.provider_raw
        if isinstance(raw, dict) and isinstance(raw.get(RAW_KEY), list):
            return "assistant", list(raw[RAW_KEY])
        blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
        return "assistant", blocks
    return "user", [{"type": "text", "text": message.content}] if message.content else []


_CUT_OFF = ("max_tokens", "model_context_window_exceeded")
"""Anthropic stop reasons of an answer cut off before the model finished it."""


async def _fold(events: Any, observer: TurnObserver, model: str, target: errors.Target) -> AssistantTurn:
    blocks: dict[int, dict[str, Any]] = {}
    json_parts: dict[int, list[str]] = {}
    usage = Usage()
    stop: str | None = None
    async for event in events:
        observer.chunk()
        kind = event.type
        if kind == "message_start":
            usage = _usage(event.message.usage, usage)
            reported(usage)  # billed even if the stream fails after this
        elif kind == "content_block_start":
            block = event.content_block.model_dump(mode="json", exclude_none=True)
            if block["type"] == "tool_use":
                observer.tool_call()
                block["input"] = {}
                json_parts[event.index] = []
            blocks[event.index] = block
        elif kind == "content_block_delta":
            _apply(blocks[event.index], json_parts, event.index, event.delta, observer)
        elif kind == "message_delta":
            usage = _usage(event.usage, usage)
            reported(usage)
            stop = event.delta.stop_reason or stop
        elif kind == "message_stop":
            turn = _turn([blocks[i] for i in sorted(blocks)], json_parts, sorted(blocks), unreported(usage), model)
            return turn.model_copy(update={"stop_reason": stop, "truncated": stop in _CUT_OFF})
    raise errors.incomplete(target)


def _apply(
    block: dict[str, Any], json_parts: dict[int, list[str]], index: int, delta: Any, observer: TurnObserver
) -> None:
    if delta.type == "text_delta":
        block["text"] = block.get("text", "") + delta.text
        observer.text(delta.text)
    elif delta.type == "input_json_delta":
        json_parts[index].append(delta.partial_json)
    elif delta.type == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.thinking
    elif delta.type == "signature_delta":
        block["signature"] = block.get("signature", "") + delta.signature


def _turn(
    blocks: list[dict[str, Any]], json_parts: dict[int, list[str]], order: list[int], usage: Usage, model: str
) -> AssistantTurn:
    calls: list[ToolCall] = []
    for index, block in zip(order, blocks, strict=True):
        if block["type"] == "tool_use":
            arguments, problem = tool_arguments.parse("".join(json_parts.get(index, [])))
            block["input"] = arguments
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments, arguments_error=problem))
    text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
    plain = all(b["type"] in _REBUILT for b in blocks)
    return AssistantTurn(
        text=text, tool_calls=calls, usage=usage, model=model, provider_raw=None if plain else {RAW_KEY: blocks}
    )


def _usage(reported: Any, known: Usage) -> Usage:
    """Anthropic reports uncached input apart from cache reads and writes;
    Stalwart counts all input, cached included."""
    if reported is None:
        return known
    cached = getattr(reported, "cache_read_input_tokens", None)
    written = getattr(reported, "cache_creation_input_tokens", None)
    plain = getattr(reported, "input_tokens", None)
    input_tokens = known.input_tokens if plain is None else plain + (cached or 0) + (written or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=getattr(reported, "output_tokens", None) or known.output_tokens,
        cached_tokens=known.cached_tokens if cached is None else cached,
    )
