"""The `scripted` model: canned replies, used in order, for deterministic runs without a network.

Replies come from the agent's `scripted` list or, when that is empty, from the
worker's `DEBUG_MOCK_RESPONSES` environment variable as the KAOS seed defines
it: a JSON array of replies (a non-array JSON value is a one-item list, text
that is not JSON is one reply). Reply N answers model call N of the run.
Mock replies are JSON actions (`{"tool": ...}`, `{}`, then the final text), so
an agent reading them speaks the two-phase JSON protocol (`speaks_mock_actions`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from stalwart.activities.providers.base import ModelConfigError
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.contracts.messages import AssistantTurn, ToolCall, Usage

MOCK_ENV = "DEBUG_MOCK_RESPONSES"


def parse_mock_responses(raw: str) -> list[ScriptedReply]:
    """Parse `DEBUG_MOCK_RESPONSES` as the KAOS seed does."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return [ScriptedReply(text=raw)]
    items = value if isinstance(value, list) else [value]
    return [ScriptedReply(text=item if isinstance(item, str) else json.dumps(item)) for item in items]


def speaks_mock_actions(agent: AgentSpec, environ: Mapping[str, str] | None = None) -> bool:
    """Whether `agent`'s replies are `DEBUG_MOCK_RESPONSES`, read as the KAOS seed reads them: JSON actions.

    Seed 000 feeds its mock replies to its two-phase loop, whatever the agent: `["{}", "Hello"]` is "no action",
    then the final response `Hello`. So a scripted agent with no `[[scripted]]` replies speaks the JSON action
    protocol when the variable is set, unless its file chose `fenced`.
    """
    environ = os.environ if environ is None else environ
    return (
        agent.model == "scripted"
        and not agent.scripted
        and agent.action_format == "native"
        and bool(environ.get(MOCK_ENV))
    )


class ScriptedProvider:
    """Answers model call N with reply N."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def replies(self, context: ModelContext) -> list[ScriptedReply]:
        if context.agent.scripted:
            return context.agent.scripted
        raw = self._environ.get(MOCK_ENV)
        return parse_mock_responses(raw) if raw else []

    async def complete(self, context: ModelContext) -> AssistantTurn:
        replies = self.replies(context)
        index = context.step - 1
        if index >= len(replies):
            raise ModelConfigError(
                f"the scripted model has no reply for model call {context.step}: agent {context.agent.name!r} "
                f"scripts {len(replies)} repl{'y' if len(replies) == 1 else 'ies'}. Add replies under [[scripted]] "
                f"in the agent file or to {MOCK_ENV}, or choose a real model."
            )
        reply = replies[index]
        calls = [
            ToolCall(id=call.id or f"call_{context.step}_{n}", name=call.name, arguments=call.arguments)
            for n, call in enumerate(reply.tool_calls, start=1)
        ]
        if not context.tools_enabled or not context.tools:  # as a real model: no tools offered, none called
            calls = []
        return AssistantTurn(
            text=reply.text,
            tool_calls=calls,
            usage=Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens),
            model="scripted",
        )
