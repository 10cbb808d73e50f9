"""Typed output on the wire: how each provider is asked for an answer that fits the agent's `[output]` schema.

Each is asked the strongest way it supports: Chat Completions `response_format` (`json_schema`, strict where the
schema allows), Responses `text.format`, Anthropic's `output_config.format`, or, for a schema Anthropic's structured
output cannot take, a final-answer tool (forced when no other tool is offered). Whatever the way, the turn's text is
the answer as JSON, which the workflow validates against the schema as written (`contracts/output_schema.py`).

These APIs want an object at the root of the schema, so a schema of another type (`list[int]`, a string) is sent
wrapped as the one property `result` of an object, and the answer unwrapped before anyone else reads it.
"""

from __future__ import annotations

import json
from typing import Any

from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import OutputSpec
from stalwart.contracts.messages import AssistantTurn, ToolCall
from stalwart.contracts.output_schema import strict_compatible

WRAPPED = "result"
"""The property a schema whose root is not an object is sent as."""


def asked(context: ModelContext) -> OutputSpec | None:
    """The output this call asks for natively: the agent's `[output]` (a text protocol's acting call has it taken
    off), unless `[extra] structured_output = "prompt"` keeps it to the system prompt."""
    output = context.agent.output
    if output is None or output.schema_ is None or context.agent.extra.get("structured_output") == "prompt":
        return None
    return output


def prompted(context: ModelContext) -> str:
    """What the system prompt says of the answer's schema: nothing when the provider is asked for it natively."""
    output, agent = context.agent.output, context.agent
    if output is None or agent.extra.get("structured_output") != "prompt" or agent.action_format != "native":
        return ""  # a text protocol has put it in the prompt already
    return instructions_note(output)


def sent_schema(output: OutputSpec) -> dict[str, Any]:
    """The schema as the APIs take it: an object at the root, wrapping any other."""
    schema = output.schema_ or {}
    if schema.get("type") == "object":
        return schema
    inner = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {WRAPPED: inner},
        "required": [WRAPPED],
        "additionalProperties": False,
    }
    for key in ("$defs", "definitions"):  # `$ref`s point from the root: the definitions stay there
        if key in schema:
            wrapper[key] = schema[key]
    return wrapper


def is_wrapped(output: OutputSpec) -> bool:
    return (output.schema_ or {}).get("type") != "object"


def chat_response_format(output: OutputSpec) -> dict[str, Any]:
    """Chat Completions `response_format`."""
    return {"type": "json_schema", "json_schema": _json_schema(output)}


def responses_text(output: OutputSpec) -> dict[str, Any]:
    """Responses `text`: the same JSON schema, flattened into `format`."""
    return {"format": {"type": "json_schema", **_json_schema(output)}}


def _json_schema(output: OutputSpec) -> dict[str, Any]:
    schema = sent_schema(output)
    named: dict[str, Any] = {"name": output.name, "schema": schema, "strict": strict_compatible(schema)}
    if output.description:
        named["description"] = output.description
    return named


def instructions_note(output: OutputSpec) -> str:
    """What a model asked in text (a text action protocol) is told of the answer it must give."""
    about = f" ({output.description})" if output.description else ""
    return (
        f"\n\n## Final answer\nYour final answer{about} is only a JSON value that matches this JSON Schema, with "
        f"nothing before or after it:\n{json.dumps(output.schema_, ensure_ascii=False)}"
    )


def final_tool(output: OutputSpec) -> dict[str, Any]:
    """The final-answer tool, for Anthropic: its input is the answer."""
    return {
        "name": output.name,
        "description": output.description or "Give your final answer: call this once you have it, with the answer.",
        "input_schema": sent_schema(output),
    }


def answered(output: OutputSpec | None, turn: AssistantTurn, *, final_tool: bool = False) -> AssistantTurn:
    """The turn with its answer as the workflow reads it: a wrapped answer unwrapped, or, where the provider was
    offered the final-answer tool (`final_tool`), a call of it made the text. Other tool calls of the same turn are
    kept (they run first; the model answers again after)."""
    if output is None:
        return turn
    finals = [call for call in turn.tool_calls if call.name == output.name] if final_tool else []
    if finals:
        rest = [call for call in turn.tool_calls if call.name != output.name]
        if rest:  # answered alongside other calls: those run, and the answer comes in a later turn
            return turn.model_copy(update={"tool_calls": rest})
        return _final_text(output, turn, finals[-1])
    if not is_wrapped(output) or turn.tool_calls:
        return turn
    try:
        value = json.loads(turn.text)
    except ValueError:
        return turn  # not JSON: left as it is, for the workflow to say so to the model
    if isinstance(value, dict) and set(value) == {WRAPPED}:
        return turn.model_copy(update={"text": json.dumps(value[WRAPPED], ensure_ascii=False)})
    return turn


def _final_text(output: OutputSpec, turn: AssistantTurn, call: ToolCall) -> AssistantTurn:
    arguments: Any = call.arguments
    if is_wrapped(output) and isinstance(arguments, dict) and set(arguments) == {WRAPPED}:
        arguments = arguments[WRAPPED]
    text = json.dumps(arguments, ensure_ascii=False)
    # The model's own record of the turn says it answered in text: no tool call is left waiting for a result.
    return turn.model_copy(update={"text": text, "tool_calls": [], "provider_raw": None})
