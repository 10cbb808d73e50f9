"""The OpenAI Responses API.

Wire format (Prompty §9.4): the output items of a turn (`message`,
`function_call`, `reasoning`) go back into the next input verbatim, followed
by one `function_call_output` item per result. Each `function_call` item is
kept whole, its `id` (`fc_...`) and its arguments as the model wrote them,
even when the turn's text is rebuilt from the step record.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import openai
from openai.types.responses import Response, ResponseStreamEvent

from stalwart.activities.providers import errors, structured, tool_arguments
from stalwart.activities.providers.calling import Endpoint, streamed_turn
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.providers.openai_post import post_streamed
from stalwart.activities.streaming import TurnObserver
from stalwart.activities.usage import unreported
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, Usage

RAW_KEY = "openai_responses"
_DONE = {"response.completed", "response.incomplete"}
_REBUILT = {"message", "function_call"}
"""Items rebuilt from the turn's text and calls; a turn with others (reasoning) keeps its items, in history once."""
CALLS_KEY = "openai_responses_calls"
"""A plain turn's `function_call` items, verbatim: `id` and the arguments' text are not in its ToolCalls."""


class OpenAIResponsesProvider:
    """Streams one response and folds its events into an AssistantTurn."""

    streaming: Literal[True] = True

    def __init__(
        self, clients: SdkClients, endpoint: Endpoint = Endpoint("openai-responses", "OPENAI_API_KEY")
    ) -> None:
        self.endpoint = endpoint
        self.clients = clients

    async def complete(self, context: ModelContext, observer: TurnObserver) -> AssistantTurn:
        turn = await streamed_turn(
            self.endpoint,
            context.agent,
            self.clients,
            openai.AsyncOpenAI,
            lambda model: self.request(context, model),
            send,
            lambda events, model, target: _fold(events, observer, model, target),
        )
        return structured.answered(structured.asked(context), turn)

    def request(self, context: ModelContext, model: str) -> dict[str, Any]:
        """The JSON body of the request: what `responses.create(**request)` would send (`openai_post` says why it is
        not called). Plain JSON values only (dicts, lists, strings, numbers), as it goes out unchanged."""
        agent = context.agent
        request: dict[str, Any] = {
            "model": model,
            "instructions": agent.instructions + structured.prompted(context),
            "input": response_input(context),
            "stream": True,
        }
        if agent.temperature is not None:
            request["temperature"] = agent.temperature
        if agent.max_output_tokens is not None:
            request["max_output_tokens"] = agent.max_output_tokens
        if context.tools:
            request["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": False,
                }
                for t in context.tools
            ]
            request["tool_choice"] = "auto" if context.tools_enabled else "none"
        if (output := structured.asked(context)) is not None:  # typed output
            request["text"] = structured.responses_text(output)
        return request


async def send(client: openai.AsyncOpenAI, body: dict[str, Any]) -> openai.AsyncStream[ResponseStreamEvent]:
    """`body` streamed from POST /responses, as `responses.create(**body)` would send it, without its typed
    transform (`openai_post`)."""
    return await post_streamed(
        client, "/responses", body, cast_to=Response, stream_cls=openai.AsyncStream[ResponseStreamEvent]
    )


def response_input(context: ModelContext) -> list[dict[str, Any]]:
    """The conversation as Responses input items."""
    items: list[dict[str, Any]] = []
    for message in context.messages:
        items.extend(_items(message))
    return items


def _items(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {"type": "function_call_output", "call_id": r.call_id, "output": r.for_model()}
            for r in message.tool_results
        ]
    if message.role == "assistant":
        raw = message.provider_raw
        if isinstance(raw, dict) and isinstance(raw.get(RAW_KEY), list):
            return list(raw[RAW_KEY])
        out: list[dict[str, Any]] = [{"role": "assistant", "content": message.content}] if message.content else []
        if isinstance(raw, dict) and isinstance(raw.get(CALLS_KEY), list):
            return out + list(raw[CALLS_KEY])
        out += [
            {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": json.dumps(c.arguments)}
            for c in message.tool_calls
        ]
        return out
    return [{"role": message.role, "content": message.content}]


async def _fold(events: Any, observer: TurnObserver, model: str, target: errors.Target) -> AssistantTurn:
    async for event in events:
        observer.chunk()
        kind = event.type
        if kind == "response.output_item.added" and event.item.type == "function_call":
            observer.tool_call()
        elif kind == "response.output_text.delta":
            observer.text(event.delta)
        elif kind in _DONE:
            return _turn(event.response, model)
        elif kind == "response.failed":
            failure = event.response.error
            raise errors.translate(
                openai.APIError(
                    failure.message if failure else "response failed",
                    None,  # type: ignore[arg-type]
                    body={"error": failure.model_dump() if failure else {}},
                ),
                target,
                None,
            ) or errors.incomplete(target)
        elif kind == "error":
            raise errors.translate(
                openai.APIError(event.message, None, body={"error": {"type": event.code, "message": event.message}}),  # type: ignore[arg-type]
                target,
                None,
            ) or errors.incomplete(target)
    raise errors.incomplete(target)


def _kept(raw: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What of a turn's output items goes back verbatim: all of them when some cannot be rebuilt (reasoning),
    else its `function_call` items (their ids), else nothing (the text is in the step record)."""
    if not all(item["type"] in _REBUILT for item in raw):
        return {RAW_KEY: raw}
    calls = [item for item in raw if item["type"] == "function_call"]
    return {CALLS_KEY: calls} if calls else None


def _turn(response: Any, model: str) -> AssistantTurn:
    text: list[str] = []
    calls: list[ToolCall] = []
    raw: list[dict[str, Any]] = []
    for item in response.output:
        raw.append(item.model_dump(mode="json", exclude_none=True))
        if item.type == "message":
            text += [part.text for part in item.content if part.type == "output_text"]
        elif item.type == "function_call":
            arguments, problem = tool_arguments.parse(item.arguments)
            calls.append(ToolCall(id=item.call_id, name=item.name, arguments=arguments, arguments_error=problem))
    usage: Usage | None = None
    if response.usage is not None:
        details = response.usage.input_tokens_details
        usage = Usage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
        )
    stop = str(response.status or "")
    incomplete = response.incomplete_details
    if stop == "incomplete" and incomplete is not None and incomplete.reason:
        stop = f"incomplete: {incomplete.reason}"
    return AssistantTurn(
        text="".join(text),
        tool_calls=calls,
        usage=unreported(usage),
        model=model,
        provider_raw=_kept(raw),
        stop_reason=stop or None,
        truncated=stop == "incomplete: max_output_tokens",
    )
