"""What the model is sent of a long conversation: the Strands loop's conversation manager.

The record keeps every message; the model gets a window that fits its context: tool
results longer than `max_tool_result_chars` are cut with a marker saying how much, then the
oldest turns are dropped (`sliding_window`) until the estimate fits `max_input_tokens`, never
leaving a tool result whose call was dropped. `history_limit` (a message count) still applies.
"""

from __future__ import annotations

from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Message, ToolResult

CHARS_PER_TOKEN = 4
CUT_MARKER = "\n\n[... {cut:,} of {total:,} characters cut here; the run's record keeps the whole result]"


def estimated_tokens(message: Message) -> int:
    """A provider-neutral estimate: characters of text, arguments and results over four."""
    size = len(message.content)
    size += sum(len(call.name) + len(str(call.arguments)) for call in message.tool_calls)
    size += sum(len(result.content) for result in message.tool_results)
    return size // CHARS_PER_TOKEN + 4


def cut_result(result: ToolResult, limit: int) -> ToolResult:
    if len(result.content) <= limit:
        return result
    kept = result.content[:limit]
    marker = CUT_MARKER.format(cut=len(result.content) - limit, total=len(result.content))
    return result.model_copy(update={"content": kept + marker})


def prune(messages: list[Message], limit: int | None) -> list[Message]:
    """Keep the first message and the last `limit`, never starting on an orphaned tool result."""
    if limit is None or len(messages) <= limit + 1:
        return list(messages)
    return [messages[0], *_without_orphans(messages[-limit:])]


def _without_orphans(tail: list[Message]) -> list[Message]:
    """A tool message whose assistant turn was cut would be rejected by every provider."""
    while tail and tail[0].role == "tool":
        tail = tail[1:]
    return tail


def model_window(messages: list[Message], agent: AgentSpec) -> list[Message]:
    """The messages to send the model for `agent`, within its context settings.

    Walks back from the newest message, so a long conversation costs only its window.
    """
    settings = agent.context
    if agent.history_limit is not None and len(messages) > agent.history_limit + 1:
        messages = [messages[0], *_without_orphans(messages[-agent.history_limit :])]
    if settings.strategy == "none" or len(messages) <= 2:
        return [_cut(m, settings.max_tool_result_chars) for m in messages]
    first = _cut(messages[0], settings.max_tool_result_chars)
    budget = settings.max_input_tokens - estimated_tokens(first)
    tail: list[Message] = []
    for message in reversed(messages[1:]):
        message = _cut(message, settings.max_tool_result_chars)
        budget -= estimated_tokens(message)
        if budget < 0 and tail:
            break
        tail.append(message)
    return [first, *_without_orphans(list(reversed(tail)))]


def _cut(message: Message, limit: int) -> Message:
    if not any(len(r.content) > limit for r in message.tool_results):
        return message
    return message.model_copy(update={"tool_results": [cut_result(r, limit) for r in message.tool_results]})
