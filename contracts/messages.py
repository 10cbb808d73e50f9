"""The conversation between an agent and its model, in a provider-neutral shape.

Every provider adapter converts these to and from its own wire format, so the
workflow never needs to know which provider it is talking to.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class Usage(BaseModel):
    """Tokens (and, where a price is known, dollars) spent by one or more model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    estimated: bool = False
    """Some of these tokens are estimates (about 4 characters a token): the provider reported no usage for a call,
    so a `max_tokens` or `max_cost_usd` budget was enforced on the estimate."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 10),
            estimated=self.estimated or other.estimated,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens - other.input_tokens,
            output_tokens=self.output_tokens - other.output_tokens,
            cached_tokens=self.cached_tokens - other.cached_tokens,
            cost_usd=round(self.cost_usd - other.cost_usd, 10),
            estimated=self.estimated or other.estimated,
        )


class ToolCall(BaseModel):
    """A request from the model to run one tool.

    `arguments_error` is set when the model produced arguments that are not a
    JSON object; the call is then answered with a tool error instead of run.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None


TOOL_ERROR_HINT = "Check argument names and types and try again."


class ToolResult(BaseModel):
    """What a tool call produced, as the model will read it."""

    call_id: str
    name: str
    content: str
    is_error: bool = False

    @classmethod
    def failure(cls, call: ToolCall, error: str, hint: str = TOOL_ERROR_HINT) -> ToolResult:
        """A failed call, told to the model as `{"error": ..., "hint": ...}` (the tutorial seed's shape)."""
        return cls(call_id=call.id, name=call.name, content=json.dumps({"error": error, "hint": hint}), is_error=True)


class Message(BaseModel):
    """One message of the conversation.

    `provider_raw` keeps a provider's native content (Anthropic content blocks
    with thinking signatures, Responses `function_call` items) so it can be
    sent back verbatim to the provider that produced it.
    """

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    provider_raw: Any | None = None


class TranscriptRef(BaseModel):
    """The conversation as stored so far: `segments` appended blobs holding `messages` messages.

    `sha256` chains every segment's bytes, so whoever rebuilds a step's prompt from storage
    can tell it is exactly what the model activity read.
    """

    chain_id: str
    segments: int = 0
    messages: int = 0
    sha256: str = ""
    summary: str = ""
    """With context strategy `summarize`: a summary the model wrote of the conversation's older messages."""
    summarized: int = 0
    """How many messages after the first the summary replaces in what the model is sent (the record keeps them)."""


class AssistantTurn(BaseModel):
    """A model's normalised reply: text, the tool calls it asks for, and what it cost.

    `wants_final_answer` is set by text protocols whose model answered "no
    action" (`{}`): the loop then asks once more, without tools, for the final
    answer (the KAOS two-phase loop).
    """

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    provider_raw: Any | None = None
    wants_final_answer: bool = False
    needs_summary: bool = False
    """The conversation no longer fits the agent's window (context strategy `summarize`): no model was called;
    the workflow asks for a summary (`ModelRequest.summarize`), then for this step's turn again."""
    feedback: str | None = None
    """A note for the model about its own malformed reply (text protocols), sent back as a user message."""
    transcript: TranscriptRef | None = None
    """The stored conversation after this call (a `TranscriptRef`), set by the model activity."""
    context_ref: str | None = None
    """The hash under which the model activity stored the agent and its tools."""
    stop_reason: str | None = None
    """Why the model stopped, in the provider's words (`stop`, `length`, `end_turn`, `max_tokens`,
    `completed`, `incomplete: max_output_tokens` ...); None from providers that do not say."""
    truncated: bool = False
    """The answer was cut off by the output-token limit (`max_output_tokens`): it is not a finished answer."""
    recorded: bool = False
    """The model activity stored this turn (as `as_message()`) after the new messages of its request, in
    `transcript`: the next request does not carry it again. False from workers older than this field."""

    def as_message(self) -> Message:
        """The turn as the conversation keeps it, for the model's next call."""
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls, provider_raw=self.provider_raw)
