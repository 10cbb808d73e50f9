"""The `scripted` model: canned replies, used in order, for deterministic runs without a network.

Replies come from the agent's `scripted` list or, when that is empty, from the
worker's `DEBUG_MOCK_RESPONSES` environment variable as the KAOS seed defines
it: a JSON array of replies (a non-array JSON value is a one-item list, text
that is not JSON is one reply). Reply N answers model call N of the run.
"""

from __future__ import annotations

import json
import os

from stalwart.activities.providers.base import ModelConfigError
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import ScriptedReply
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
        if not context.tools_enabled:
            calls = []
        return AssistantTurn(
            text=reply.text,
            tool_calls=calls,
            usage=Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens),
            model="scripted",
        )
