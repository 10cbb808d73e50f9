"""Agent specs the serve tests send as JSON, as an app would."""

from __future__ import annotations

from typing import Any

from wire_server.script import Reply
from wire_server.server import Script, WireServer

ANSWER = (
    "Seventeen times twenty-three is three hundred and ninety-one; four more makes three hundred and ninety-five, "
    "which is the answer you asked for."
)


def chatter(*texts: str, name: str = "chatter") -> dict[str, Any]:
    """A scripted agent answering with `texts`, one per model call."""
    return {"name": name, "model": "scripted", "scripted": [{"text": text} for text in texts]}


def writer(wire: WireServer, *texts: str, pause: float = 0.1) -> tuple[dict[str, Any], Script]:
    """An agent on an OpenAI-compatible model (the wire server) that writes each answer a word every `pause` s."""
    script = wire.script(*(Reply(text=text, pause=pause) for text in texts))
    spec = {"name": "writer", "model": "openai-compatible:scripted-words", "base_url": script.openai_base_url}
    return spec, script


def gated_calculator(answer: str = "It is 395.") -> dict[str, Any]:
    """A scripted agent whose first reply calls the calculator, which waits for a person's approval."""
    return {
        "name": "gated",
        "model": "scripted",
        "tools": ["calculator"],
        "require_approval": ["calculator"],
        "scripted": [
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17*23+4"}}]},
            {"text": answer},
        ],
    }
