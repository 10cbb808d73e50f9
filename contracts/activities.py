"""Inputs and outputs of the activities, shared by the workflow that schedules them and the worker that runs them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, field_serializer, model_validator

from stalwart.contracts import failure_types
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Message, ToolCall, TranscriptRef
from stalwart.contracts.model import Contract
from stalwart.contracts.tools import ToolSpec
from stalwart.contracts.wire import Compact


class AgentContext(Compact):
    """What stays the same from one model call to the next: the agent and the tools it may call."""

    agent: AgentSpec
    tools: list[ToolSpec]


class ModelRequest(Compact):
    """Ask for the next assistant turn, with everything the activity needs and nothing twice.

    The conversation so far is in storage (`transcript`); this input adds the messages
    recorded since the last call (`new_messages`), which the activity appends to it. The
    agent and tools come inline the first time (`context`) and by their hash after that
    (`context_ref`), and a message that came by a session's `send` by the update's id (`sent`).
    So history holds each message once more at most (a sent one, once), and any step's prompt
    can be rebuilt from history and storage; a test can call the activity with a plain
    input (an empty transcript, the messages, the context).
    """

    step: int
    transcript: TranscriptRef
    new_messages: list[Message] = Field(default_factory=list)
    context: AgentContext | None = None
    context_ref: str | None = None
    tools_enabled: bool = True
    deadline: datetime | None = None
    """When the run's wall-clock budget ends; past it the activity refuses to call the model (`BUDGET_OVER`)."""
    summarize: bool = False
    """Write a summary of the older conversation instead of the next turn (context strategy `summarize`)."""
    may_defer: bool = False
    """The workflow carries a deferred turn into its next request (`AssistantTurn.deferred`). Workflows older than
    this field would drop the request's messages, so the activity stores every turn they ask for."""
    store_answer: bool = False
    """Store a reply without tool calls now, even when `may_defer` allows deferring it: in a session such a reply
    ends the turn, and deferred it would travel again in the next turn's first request."""
    sent: dict[int, str] = Field(default_factory=dict)
    """Messages of `new_messages` that came by a session's `send` update, by index, with the update's id: their
    `content` is left out, since history holds it as the update's argument, and the activity reads it from there
    (`activities/sent_messages.py`)."""

    @field_serializer("new_messages", mode="wrap")
    def _named_without_text(self, messages: list[Message], handler: SerializerFunctionWrapHandler, info: Any) -> Any:
        """A message `sent` names travels with `"content": null`, not without its empty `content`: a model activity
        older than `sent` refuses the input (Temporal retries it, "Failed decoding arguments", until an upgraded
        worker takes it) instead of reading the message as empty and sending the model, and storing, no text."""
        data = handler(messages)
        if self.sent and isinstance(data, list) and info.mode_is_json():
            return [
                {**item, "content": None} if index in self.sent and isinstance(item, dict) else item
                for index, item in enumerate(data)
            ]
        return data

    @model_validator(mode="before")
    @classmethod
    def _named_text_read_later(cls, data: Any) -> Any:
        """A message whose `content` is null is one `sent` names: empty until the activity reads its text."""
        messages = data.get("new_messages") if isinstance(data, dict) else None
        if isinstance(messages, list) and any(_named(m) for m in messages):
            named = [{k: v for k, v in m.items() if k != "content"} if _named(m) else m for m in messages]
            return {**data, "new_messages": named}
        return data


def _named(message: Any) -> bool:
    return isinstance(message, dict) and "content" in message and message["content"] is None


class ModelContext(Compact):
    """Everything a provider needs for one call: who the agent is, what it may call, what was said."""

    agent: AgentSpec
    step: int
    tools: list[ToolSpec]
    messages: list[Message]
    tools_enabled: bool = True


class DescribeToolsRequest(Contract):
    """List the tools of `agent`: its registered tools and its MCP servers' tools, bound (`bindings`).

    Only the fields that say which tools the agent has travel (`TOOL_SOURCES`); the activity reads the others as
    their defaults. The whole spec is in the run's input already, and this request used to repeat it in history:
    instructions, script and loop settings, in every run.
    """

    agent: AgentSpec

    @field_serializer("agent", mode="wrap")
    def _only_tool_sources(self, agent: AgentSpec, handler: SerializerFunctionWrapHandler, info: Any) -> Any:
        data = handler(agent)
        if isinstance(data, dict) and info.mode_is_json():  # a Python dump keeps every field, for code reading it
            return {name: value for name, value in data.items() if name in TOOL_SOURCES}
        return data


TOOL_SOURCES = frozenset({"name", "tools", "mcp_servers", "sub_agents", "bindings"})
"""The fields of an `AgentSpec` that `describe_tools` reads: the tool names, where tools come from, the sub-agents
(whose names MCP tools must not take) and the bindings."""


class DescribeToolsResult(Contract):
    tools: list[ToolSpec]


class ToolRequest(Compact):
    """Run one tool call. `idempotency_key` is stable across retries and worker crashes."""

    call: ToolCall
    tool: ToolSpec
    idempotency_key: str
    run_inputs: dict[str, Any] = Field(default_factory=dict)
    deadline: datetime | None = None
    """When the run's wall-clock budget ends; past it the activity refuses to run the tool (`BUDGET_OVER`)."""
    chain_id: str | None = None
    """The run chain whose storage keeps a large result (`ToolResult.stored`); None keeps every result inline."""


# Failure types of the activities, under the names workflow and activity code import them by.
BUDGET_OVER = failure_types.BUDGET_OVER
LONG_RATE_LIMIT = failure_types.LONG_RATE_LIMIT
