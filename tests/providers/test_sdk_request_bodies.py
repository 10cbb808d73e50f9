"""The OpenAI providers send their request body through the SDK client's `post`, skipping `create`'s typed transform
(activities/providers/openai_post.py says why). What reaches the server must be what `create(**request)`
sends for the same request: the same body, at the same path, with the same headers, for each kind of context."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from flavors import FLAVORS, Flavor

from stalwart.activities.providers import PROVIDERS, effective
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.providers.openai_chat import RAW_KEY as CHAT_RAW
from stalwart.activities.providers.openai_responses import CALLS_KEY
from stalwart.activities.providers.openai_responses import RAW_KEY as RESPONSES_RAW
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import AgentSpec, OutputSpec
from stalwart.contracts.messages import Message, ToolCall, ToolResult
from stalwart.contracts.tools import ToolSpec

from wire_server.script import Reply
from wire_server.server import Recorded, Script, WireServer

OPENAI_FLAVORS = [f for f in FLAVORS if f.id != "anthropic"]
"""The anthropic provider calls `messages.create` itself: that SDK's `create` has no typed transform to skip."""

LOOKUP = ToolSpec(
    name="lookup",
    description="Find an order; «quotes» and ünïcode stay as written.",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}},
        "required": ["order_id"],
    },
)
REFUND = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
MALFORMED = '{"order_id": "7", '


class _Quiet:
    def text(self, delta: str) -> None: ...

    def tool_call(self) -> None: ...

    def chunk(self) -> None: ...


def _tool_rounds() -> list[Message]:
    return [
        Message(role="user", content="Refund order 7, then tell me what you did."),
        Message(
            role="assistant",
            content="Looking it up.",
            tool_calls=[
                ToolCall(id="call_1", name="lookup", arguments={"order_id": "7", "fields": ["amount", "état"]}),
                ToolCall(id="call_2", name="lookup", arguments={}),
            ],
        ),
        Message(
            role="tool",
            tool_results=[
                ToolResult(call_id="call_1", name="lookup", data={"amount": 12.5, "items": [1, 2]}),
                ToolResult(call_id="call_2", name="lookup", error="order_id is required", hint="pass an order_id"),
            ],
        ),
        Message(role="assistant", tool_calls=[ToolCall(id="call_3", name="lookup", arguments={"order_id": "8"})]),
        Message(role="tool", tool_results=[ToolResult(call_id="call_3", name="lookup", content="x" * 50, cut_chars=9)]),
    ]


def _malformed_call(flavor: Flavor) -> Message:
    """An assistant turn whose arguments did not parse, kept as the model wrote it (`provider_raw`)."""
    call = ToolCall(id="call_9", name="lookup", arguments={}, arguments_error="not JSON")
    if flavor.id == "openai-responses":
        raw: dict[str, Any] = {
            CALLS_KEY: [
                {
                    "type": "function_call",
                    "id": "fc_9",
                    "call_id": "call_9",
                    "name": "lookup",
                    "arguments": MALFORMED,
                    "status": "completed",
                }
            ]
        }
    else:
        raw = {
            CHAT_RAW: {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": MALFORMED}}
                ],
            }
        }
    return Message(role="assistant", tool_calls=[call], provider_raw=raw)


def _reasoning_turn() -> Message:
    """A Responses turn with a reasoning item, whose output items go back verbatim."""
    return Message(
        role="assistant",
        content="Done.",
        provider_raw={
            RESPONSES_RAW: [
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Think."}]},
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                },
            ]
        },
    )


CONTEXTS: dict[str, Callable[[Flavor], tuple[dict[str, Any], list[Message], dict[str, Any]]]] = {
    "first-call": lambda f: ({}, [Message(role="user", content="Hi")], {"tools": []}),
    "tools-and-results": lambda f: (
        {"temperature": 0.3, "max_output_tokens": 500, "instructions": "Be brief.\nNever guess."},
        _tool_rounds(),
        {},
    ),
    "tools-off": lambda f: ({}, _tool_rounds(), {"tools_enabled": False}),
    "malformed-arguments": lambda f: (
        {},
        [
            *_tool_rounds(),
            _malformed_call(f),
            Message(role="tool", tool_results=[ToolResult(call_id="call_9", name="lookup", error="not JSON")]),
        ],
        {},
    ),
    "typed-output": lambda f: ({"output": OutputSpec(schema=REFUND), "temperature": 0.0}, _tool_rounds(), {}),
    "typed-output-not-an-object": lambda f: (
        {"output": OutputSpec.for_type(list[int])},
        [Message(role="user", content="Numbers?")],
        {"tools": []},
    ),
    "reasoning-kept": lambda f: (
        {},
        [Message(role="user", content="Hi"), _reasoning_turn(), Message(role="user", content="Again")],
        {},
    ),
}


def _provider(wire: WireServer, flavor: Flavor, case: str, clients: SdkClients) -> tuple[Any, ModelContext, Script]:
    """The flavour's provider, on `clients`, and the context of `case`, whose requests go to a new script."""
    fields, messages, options = CONTEXTS[case](flavor)
    script = wire.script(Reply(text="ok"), Reply(text="ok"))
    agent = effective(
        AgentSpec(
            name="bodies",
            model=flavor.model,
            base_url=flavor.base_url(script),
            api_key_env=flavor.spec_key_env,
            **fields,
        )
    )
    context = ModelContext(agent=agent, step=1, tools=options.pop("tools", [LOOKUP]), messages=messages, **options)
    return PROVIDERS[agent.model.split(":", 1)[0]](agent, clients), context, script


async def _sent(wire: WireServer, flavor: Flavor, case: str) -> tuple[Recorded, Recorded]:
    """The request the provider sent for `case`, and the one the SDK's `create` sends for its request."""
    clients = SdkClients()
    try:
        provider, context, script = _provider(wire, flavor, case, clients)
        await provider.complete(context, _Quiet())
        [client] = list(clients)  # the very client the provider used
        assert isinstance(client, openai.AsyncOpenAI)
        request = provider.request(context, context.agent.model.split(":", 1)[1])
        api = client.responses if flavor.id == "openai-responses" else client.chat.completions
        stream = await api.create(**request)
        async for _ in stream:
            pass
    finally:
        await clients.aclose()
    ours, sdks = script.requests
    return ours, sdks


@pytest.mark.parametrize("case", list(CONTEXTS))
@pytest.mark.parametrize("flavor", OPENAI_FLAVORS, ids=[f.id for f in OPENAI_FLAVORS], indirect=True)
async def test_the_body_sent_is_the_one_the_sdks_create_sends(wire, flavor: Flavor, case: str):
    ours, sdks = await _sent(wire, flavor, case)
    assert ours.path == sdks.path
    assert ours.body == sdks.body


@pytest.mark.parametrize("flavor", OPENAI_FLAVORS, ids=[f.id for f in OPENAI_FLAVORS], indirect=True)
async def test_the_request_carries_the_headers_the_sdks_create_sends(wire, flavor: Flavor):
    ours, sdks = await _sent(wire, flavor, "tools-and-results")
    assert ours.headers == sdks.headers
    assert ours.headers["authorization"] == f"Bearer sk-test-{flavor.id}-0123456789"


@pytest.mark.parametrize("flavor", OPENAI_FLAVORS, ids=[f.id for f in OPENAI_FLAVORS], indirect=True)
async def test_the_request_skips_the_sdks_typed_transform(wire, flavor: Flavor, monkeypatch: pytest.MonkeyPatch):
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the SDK's typed transform walked the request")

    monkeypatch.setattr(openai.resources.chat.completions.completions, "async_maybe_transform", refuse)
    monkeypatch.setattr(openai.resources.responses.responses, "async_maybe_transform", refuse)
    clients = SdkClients()
    try:
        provider, context, script = _provider(wire, flavor, "tools-and-results", clients)
        turn = await provider.complete(context, _Quiet())
    finally:
        await clients.aclose()
    assert (turn.text, len(script.requests)) == ("ok", 1)
