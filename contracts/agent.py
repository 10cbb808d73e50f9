"""The agent spec: what an agent is, independent of where it runs.

A spec travels inside the workflow input, so a run is fully described by its
history: replaying it needs no agent file.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ActionFormat = Literal["native", "json", "fenced"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Budgets(_Strict):
    """Limits that end a run. Whichever is reached first stops it."""

    max_steps: int = Field(10, ge=1, description="Model turns before the run stops with `max_steps`.")
    max_seconds: float | None = Field(None, gt=0, description="Wall-clock seconds, held by a durable timer.")
    max_tokens: int | None = Field(None, ge=1, description="Cumulative input + output tokens.")
    max_cost_usd: float | None = Field(None, gt=0, description="Cumulative cost from the price table.")
    max_parallel_tools: int = Field(4, ge=1, description="Tool calls of one turn that run at once.")
    finalize_on_budget: bool = Field(
        False, description="At max_steps or max_tokens, make one last model call without tools for a best-effort answer."
    )


class ScriptedToolCall(_Strict):
    """A tool call the `scripted` model makes; ids default to `call_<step>_<n>`."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptedReply(_Strict):
    """One reply of the `scripted` model: text, tool calls, or both."""

    text: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    input_tokens: int = 10
    output_tokens: int = 10


class AgentSpec(_Strict):
    """An agent: its instructions, its model, its tools and its budgets."""

    name: str = Field(description="Identifier of the agent: letters, digits, '-' and '_'.")
    description: str = ""
    instructions: str = "You are a helpful assistant."
    model: str = Field("scripted", description="`scripted`, or `provider:model` such as `openai:gpt-4.1-mini`.")
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="Name of the worker's environment variable holding the API key.")
    temperature: float | None = Field(None, ge=0, le=2)
    max_output_tokens: int | None = Field(None, ge=1)
    action_format: ActionFormat = "native"
    tools: list[str] = Field(default_factory=list)
    history_limit: int | None = Field(None, ge=2, description="Keep the goal and the last N messages when calling the model.")
    budgets: Budgets = Field(default_factory=Budgets)
    scripted: list[ScriptedReply] = Field(default_factory=list, description="Replies of the `scripted` model, in order.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Free-form settings for extensions.")

    @field_validator("name")
    @classmethod
    def _name_is_identifier(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,63}", value):
            raise ValueError("use 1-64 letters, digits, '-' or '_', starting with a letter")
        return value

    @field_validator("tools")
    @classmethod
    def _tools_unique(cls, value: list[str]) -> list[str]:
        duplicates = sorted({t for t in value if value.count(t) > 1})
        if duplicates:
            raise ValueError(f"tools listed twice: {', '.join(duplicates)}; list each tool once")
        return value
