"""What the model is sent of a long conversation: the Strands loop's conversation manager.

The record keeps every message; the model gets a window that fits its context: tool
results longer than `max_tool_result_chars` are cut with a marker saying how much, then the
oldest turns are dropped (`sliding_window`) until the estimate fits `max_input_tokens`, never
leaving a tool result whose call was dropped. `history_limit` (a message count) still applies.

With `summarize` (seed 003's summarize-and-replace, Strands' summarising conversation
manager), a conversation that no longer fits has its older messages replaced by a summary the
model writes (in a model activity of its own, so the summary is in the run's history); the
summary travels with the conversation's `TranscriptRef`, and the sliding window stays as the
safety net behind it.
"""

from __future__ import annotations

import json

from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Message, TranscriptRef

CHARS_PER_TOKEN = 4
SUMMARY_HEADER = (
    "Summary of the earlier conversation (its messages were replaced by this summary to fit the context):\n\n"
)
SUMMARY_INSTRUCTIONS = (
    "You summarise the earlier part of a conversation between a user, an AI agent and the agent's tools, for the "
    "agent to carry on from. Keep what the user asked, the facts found, the tool results that matter (with names, "
    "numbers and ids), the decisions taken and what remains to do. Write plain, concise text; no preamble."
)


def estimated_tokens(message: Message) -> int:
    """A provider-neutral estimate: characters of text, arguments and results over four."""
    size = len(message.content)
    size += sum(len(call.name) + len(str(call.arguments)) for call in message.tool_calls)
    size += sum(len(result.for_model()) for result in message.tool_results)
    return size // CHARS_PER_TOKEN + 4


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


def summarized(messages: list[Message], ref: TranscriptRef | None) -> list[Message]:
    """The conversation with the summary `ref` carries in place of the messages it replaces."""
    if ref is None or not ref.summarized or len(messages) <= 1:
        return messages
    return [messages[0], Message(role="user", content=SUMMARY_HEADER + ref.summary), *messages[1 + ref.summarized :]]


def overflows(messages: list[Message], agent: AgentSpec, ref: TranscriptRef | None) -> bool:
    """Whether, under `summarize`, the conversation (with its summary so far) no longer fits `max_input_tokens`."""
    settings = agent.context
    if settings.strategy != "summarize":
        return False
    shown = summarized(messages, ref)
    return len(shown) > 2 and sum(estimated_tokens(_cut(m, settings.max_tool_result_chars)) for m in shown) > (
        settings.max_input_tokens
    )


def summary_cut(messages: list[Message], agent: AgentSpec, ref: TranscriptRef | None) -> int:
    """Where the messages kept whole begin: the newest that fit half of `max_input_tokens` (room to go on), never
    a tool result without its call; at least one message not yet summarised goes into the summary."""
    settings = agent.context
    start = 1 + (ref.summarized if ref is not None else 0)
    budget = settings.max_input_tokens // 2
    cut = len(messages)
    while cut - 1 > start:
        budget -= estimated_tokens(_cut(messages[cut - 1], settings.max_tool_result_chars))
        if budget < 0:
            break
        cut -= 1
    while cut < len(messages) and messages[cut].role == "tool":
        cut += 1
    return min(max(cut, start + 1), len(messages))


def summary_context(
    messages: list[Message], agent: AgentSpec, ref: TranscriptRef | None, step: int
) -> tuple[ModelContext, TranscriptRef]:
    """The model call that writes the summary, and the conversation's ref once that summary is written (its
    `summary` to be filled with the call's text)."""
    base = ref or TranscriptRef(chain_id="")
    cut = summary_cut(messages, agent, ref)
    older = messages[1 + base.summarized : cut]
    parts = [f"Summary so far:\n{base.summary}"] if base.summary else []
    parts += [_as_text(m, agent.context.max_tool_result_chars) for m in older]
    request = Message(role="user", content="Summarise this conversation:\n\n" + "\n\n".join(parts))
    writer = agent.model_copy(update={"instructions": SUMMARY_INSTRUCTIONS, "action_format": "native"})
    context = ModelContext(agent=writer, step=step, tools=[], messages=[request], tools_enabled=False)
    return context, base.model_copy(update={"summarized": cut - 1})


def _as_text(message: Message, limit: int) -> str:
    lines = [f"{message.role}: {message.content}"] if message.content else []
    lines += [f"{message.role} called {c.name}({json.dumps(c.arguments)})" for c in message.tool_calls]
    lines += [f"result of {r.name}: {r.cut_to(limit).for_model()}" for r in message.tool_results]
    return "\n".join(lines)


def model_window(messages: list[Message], agent: AgentSpec, ref: TranscriptRef | None = None) -> list[Message]:
    """The messages to send the model for `agent`, within its context settings (`ref`: the summary so far).

    Walks back from the newest message, so a long conversation costs only its window.
    """
    settings = agent.context
    if settings.strategy == "summarize":
        messages = summarized(messages, ref)
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
    if not message.tool_results:  # most messages: no copy to make
        return message
    cut = [r.cut_to(limit) for r in message.tool_results]
    if all(c is r for c, r in zip(cut, message.tool_results, strict=True)):
        return message
    return message.model_copy(update={"tool_results": cut})
