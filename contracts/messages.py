"""The conversation between an agent and its model, in a provider-neutral shape.

Every provider adapter converts these to and from its own wire format, so the
workflow never needs to know which provider it is talking to.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from stalwart.contracts.wire import Compact

Role = Literal["system", "user", "assistant", "tool"]


class Usage(Compact):
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


class ToolCall(Compact):
    """A request from the model to run one tool.

    `arguments_error` is set when the model produced arguments that are not a
    JSON object; the call is then answered with a tool error instead of run.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None


TOOL_ERROR_HINT = "Check argument names and types and try again."

_DATA_AS_TEXT = json.JSONEncoder(default=str)
"""`json.dumps(data, default=str)`, without building an encoder per call: a result's text is read twice a call."""


CUT_MARKER = "\n\n[... {cut:,} of {total:,} characters cut here; the run's record keeps the whole result]"


class StoredContent(Compact):
    """Where a large tool result's content is kept: written once by the tool activity, named by its hash.

    The model activity reads it from there, so the result enters history once (the tool's completion)
    instead of again in the next model call's input; the conversation in storage refers to it too.
    """

    sha256: str
    """Of the stored JSON (`content` and `data`); it names the object in the run chain's storage."""
    chars: int


class ToolResult(Compact):
    """One tool call's outcome, typed from the tool function to the model message.

    Exactly one of three things: `content` (the tool answered text), `data` (it answered a value: a dict,
    a list, a pydantic model's dump, an MCP tool's structured content) or `error` with a `hint` for the
    model. Each wire format turns it into text through `for_model()` alone, so a provider adapter never
    decides what a result says.
    """

    call_id: str
    name: str
    content: str = ""
    data: Any | None = None
    """A result that was not text, kept as JSON-compatible data (for programs reading the record); the model
    reads it as JSON."""
    error: str | None = None
    hint: str | None = None
    """What the model could do about `error`; a failure with a hint reaches it as `{"error": ..., "hint": ...}`
    (the production-loop tutorial's shape), one without as the error's text."""
    cut_chars: int = 0
    """The size marker: how many characters at the end of the result the model is not sent
    (`[context] max_tool_result_chars`); the record keeps them all."""
    stored: StoredContent | None = None
    """Where `content` and `data` are kept in storage, when the tool activity stored them (large results)."""

    @model_validator(mode="before")
    @classmethod
    def _from_text_encoded_failure(cls, value: Any) -> Any:
        """Histories recorded before this shape carry a failure as `is_error` and its JSON inside `content`."""
        if not isinstance(value, dict) or "is_error" not in value:
            return value
        value = dict(value)
        if value.pop("is_error") and value.get("error") is None:
            text = value.pop("content", "")
            try:
                told = json.loads(text)
            except ValueError:
                told = None
            if isinstance(told, dict) and set(told) == {"error", "hint"}:
                value.update(error=str(told["error"]), hint=str(told["hint"]))
            else:
                value["error"] = text
        return value

    def by_reference(self) -> ToolResult:
        """This result without its content when that is in storage: what the next model call's input carries."""
        if self.stored is None:
            return self
        return self.model_copy(update={"content": "", "data": None})

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def text(self) -> str:
        """The whole outcome as text, before any cut: what the step log shows."""
        if self.error is not None:
            if self.hint is None:
                return self.error
            return json.dumps({"error": self.error, "hint": self.hint})
        if self.data is not None:
            return _DATA_AS_TEXT.encode(self.data)
        return self.content

    def for_model(self) -> str:
        """What the model reads: `text`, with the size marker when part of it was cut."""
        text = self.text
        if not self.cut_chars:
            return text
        return text + CUT_MARKER.format(cut=self.cut_chars, total=len(text) + self.cut_chars)

    def cut_to(self, limit: int) -> ToolResult:
        """This result as the model is sent it when at most `limit` characters fit (a failure stays a failure)."""
        text = self.text
        if len(text) <= limit:
            return self
        kept = {"error": text[:limit], "hint": None} if self.is_error else {"content": text[:limit], "data": None}
        return self.model_copy(update={**kept, "cut_chars": self.cut_chars + len(text) - limit})

    @classmethod
    def failure(cls, call: ToolCall, error: str, hint: str | None = TOOL_ERROR_HINT) -> ToolResult:
        return cls(call_id=call.id, name=call.name, error=error, hint=hint)

    @classmethod
    def returned(cls, call: ToolCall, value: Any) -> ToolResult:
        """What a tool function returned: a string as text, any other value as data."""
        if isinstance(value, str):
            return cls(call_id=call.id, name=call.name, content=value)
        if isinstance(value, BaseModel):
            data = value.model_dump(mode="json")
        else:
            data = json.loads(json.dumps(value, default=str))
        return cls(call_id=call.id, name=call.name, data=data)


class Message(Compact):
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


class TranscriptRef(Compact):
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


class AssistantTurn(Compact):
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
    deferred: bool = False
    """Nothing was stored: the next request carries the request's new messages and this answer, and its call stores
    them with its own (`ModelRequest.may_defer`). A call that carries an answer always stores, so the conversation is
    written at every other model call, one durable write (or object store PUT) for two, and a message travels in two
    requests at most. An answer that ends a run is then often never written: no model call reads it. A session's
    reply without tool calls is stored at once (`ModelRequest.store_answer`): the next request would be the next
    turn's."""

    def as_message(self) -> Message:
        """The turn as the conversation keeps it, for the model's next call."""
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls, provider_raw=self.provider_raw)
