"""Tool-call arguments as models send them: a JSON text that should hold an object."""

from __future__ import annotations

import json
from typing import Any


def parse(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """The arguments object, or `{}` and what is wrong with the text (fed back to the model as a tool error)."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        return (
            {},
            f"the arguments are not valid JSON ({err.msg} at position {err.pos}): {raw[:200]!r}. Send a JSON object.",
        )
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, got {type(value).__name__}: {raw[:200]!r}."
    return value, None
