"""OpenAI Chat Completions, for OpenAI itself and any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio).

Wire format (Prompty §9.4): the assistant message carries `tool_calls`, each
result goes back as its own `tool` message with `tool_call_id`. A message
with malformed arguments is kept as sent (`provider_raw`), so the model sees
exactly what it wrote next to the error; others are rebuilt from the turn,
which keeps each turn in the history once.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from stalwart.activities.providers import errors, structured, tool_arguments
from stalwart.activities.providers.calling import Endpoint, streamed_turn
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.providers.openai_post import post_streamed
from stalwart.activities.streaming import TurnObserver
from stalwart.activities.usage import reported, unreported
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, Usage

RAW_KEY = "openai_chat"


class OpenAIChatProvider:
    """Streams one chat completion and folds its chunks into an AssistantTurn."""

    streaming: Literal[True] = True

    def __init__(self, endpoint: Endpoint, clients: SdkClients, *, legacy_max_tokens: bool = False) -> None:
        self.endpoint = endpoint
        self.clients = clients
        self._legacy_max_tokens = legacy_max_tokens
        """Self-hosted servers know `max_tokens`, not OpenAI's newer `max_completion_tokens`."""

    async def complete(self, context: ModelContext, observer: TurnObserver) -> AssistantTurn:
        turn = await streamed_turn(
            self.endpoint,
            context.agent,
            self.clients,
            openai.AsyncOpenAI,
            lambda model: self.request(context, model),
            send,
            lambda events, model, target: _fold(events, observer, context.step, model, target),
        )
        return structured.answered(structured.asked(context), turn)

    def request(self, context: ModelContext, model: str) -> dict[str, Any]:
        """The JSON body of the request: what `chat.completions.create(**request)` would send (`openai_post` says why
        it is not called). Plain JSON values only (dicts, lists, strings, numbers), as it goes out unchanged."""
        agent = context.agent
        request: dict[str, Any] = {
            "model": model,
            "messages": chat_messages(context),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if agent.temperature is not None:
            request["temperature"] = agent.temperature
        if agent.max_output_tokens is not None:
            request["max_tokens" if self._legacy_max_tokens else "max_completion_tokens"] = agent.max_output_tokens
        if context.tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in context.tools
            ]
            request["tool_choice"] = "auto" if context.tools_enabled else "none"
        if (output := structured.asked(context)) is not None:  # typed output
            request["response_format"] = structured.chat_response_format(output)
        return request


async def send(client: openai.AsyncOpenAI, body: dict[str, Any]) -> openai.AsyncStream[ChatCompletionChunk]:
    """`body` streamed from POST /chat/completions, as `chat.completions.create(**body)` would send it, without its
    typed transform (`openai_post`). Its `validate_response_format`, left out too, only refuses a pydantic class as
    `response_format`, and ours is a JSON schema dict."""
    return await post_streamed(
        client, "/chat/completions", body, cast_to=ChatCompletion, stream_cls=openai.AsyncStream[ChatCompletionChunk]
    )


def chat_messages(context: ModelContext) -> list[dict[str, Any]]:
    """The conversation in Chat Completions form: system prompt, then one message per turn and per tool result."""
    system = context.agent.instructions + structured.prompted(context)
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in context.messages:
        out.extend(_chat_message(message))
    return out


def _chat_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.for_model()} for r in message.tool_results]
    if message.role == "assistant":
        raw = message.provider_raw
        if isinstance(raw, dict) and isinstance(raw.get(RAW_KEY), dict):
            return [raw[RAW_KEY]]
        sent: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            sent["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in message.tool_calls
            ]
        return [sent]
    return [{"role": message.role, "content": message.content}]


async def _fold(events: Any, observer: TurnObserver, step: int, model: str, target: errors.Target) -> AssistantTurn:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: Usage | None = None
    finish: str | None = None
    chose = False
    async for chunk in events:
        observer.chunk()
        chose = chose or bool(chunk.choices)
        if chunk.usage is not None:
            details = chunk.usage.prompt_tokens_details
            usage = Usage(
                input_tokens=chunk.usage.prompt_tokens or 0,
                output_tokens=chunk.usage.completion_tokens or 0,
                cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
            )
            reported(usage)  # billed even if the stream fails after this
        for choice in chunk.choices:
            delta = choice.delta
            if delta.tool_calls:
                observer.tool_call()
                for piece in delta.tool_calls:
                    call = calls.setdefault(piece.index, {"id": None, "name": "", "arguments": ""})
                    call["id"] = piece.id or call["id"]
                    if piece.function is not None:
                        call["name"] += piece.function.name or ""
                        call["arguments"] += piece.function.arguments or ""
            if delta.content:
                text.append(delta.content)
                observer.text(delta.content)
            if choice.finish_reason is not None:
                finish = choice.finish_reason
    if finish is None:
        raise errors.incomplete(target) if chose else errors.no_choices(target)
    turn = _turn("".join(text), calls, unreported(usage), step, model)
    return turn.model_copy(update={"stop_reason": finish, "truncated": finish == "length"})


def _turn(text: str, calls: dict[int, dict[str, Any]], usage: Usage, step: int, model: str) -> AssistantTurn:
    tool_calls: list[ToolCall] = []
    raw_calls: list[dict[str, Any]] = []
    for n, index in enumerate(sorted(calls), start=1):
        call = calls[index]
        call_id = call["id"] or f"call_{step}_{n}"
        arguments, problem = tool_arguments.parse(call["arguments"])
        tool_calls.append(ToolCall(id=call_id, name=call["name"], arguments=arguments, arguments_error=problem))
        raw_calls.append(
            {"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}
        )
    raw: dict[str, Any] = {"role": "assistant", "content": text or None}
    if raw_calls:
        raw["tool_calls"] = raw_calls
    as_written = any(call.arguments_error for call in tool_calls)
    return AssistantTurn(
        text=text, tool_calls=tool_calls, usage=usage, model=model, provider_raw={RAW_KEY: raw} if as_written else None
    )
