"""What the wire server answers, request after request: replies and faults, independent of the wire format."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    """A tool call the model makes; `raw_arguments` overrides the JSON of `arguments` (to send malformed text)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None

    @property
    def arguments_text(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """A model reply: text (streamed word by word), tool calls, usage; `pause` seconds between streamed events."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    input_tokens: int = 20
    output_tokens: int = 8
    cached_tokens: int = 0
    pause: float = 0.0
    thinking: str = ""
    """Reasoning sent before the text: an Anthropic thinking block (signed), a Responses reasoning item."""
    truncated: bool = False
    """End as cut off by the output-token limit: `length`, `max_tokens`, or status `incomplete`."""
    usage: bool = True
    """Report usage at all (some OpenAI-compatible servers send none)."""


@dataclass(frozen=True)
class Fail:
    """An HTTP error: status, the provider's error type, optional Retry-After seconds."""

    status: int
    kind: str
    message: str
    retry_after: float | None = None


@dataclass(frozen=True)
class Stall:
    """Send the response headers, then nothing for `seconds` (a hung stream before its first token),
    then `then` if given."""

    seconds: float
    then: Reply | None = None
    """A reply streamed after the silence (a slow first token), if the client is still listening."""


@dataclass(frozen=True)
class Cut:
    """Stream the first `events` events of `reply`, then drop the connection mid-body."""

    reply: Reply
    events: int


@dataclass(frozen=True)
class Freeze:
    """Stream the first `events` events of `reply`, then go silent for `seconds` (a stream that hangs midway)."""

    reply: Reply
    events: int
    seconds: float


@dataclass(frozen=True)
class Broken:
    """Stream the first `events` events of `reply`, then the provider's in-stream error event (e.g. overloaded)."""

    reply: Reply
    events: int
    kind: str
    message: str


@dataclass(frozen=True)
class Garbage:
    """Answer `status` with `body` as it is (binary junk, invalid UTF-8) under `content_type`."""

    status: int
    body: bytes
    content_type: str = "application/json"


Step = Reply | Fail | Stall | Cut | Freeze | Broken | Garbage
