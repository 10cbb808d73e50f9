"""Leave out what says nothing: the fields of a message between workflow and worker that hold their empty default.

Every model call, tool call and step travels through history as JSON, so a `null`, `false`, `0`
or `[]` that only repeats a default is paid for once per step, for the life of the run: in a
run of small tool results it was half of the history. Like protobuf's JSON mapping, these
models omit such fields and read them back as their defaults.

Only empty defaults are left out. A field whose default carries a value (a budget, a prompt)
is always written, so a payload means the same thing to a later version whose default differs.
For the same reason an empty default must never become a non-empty one.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticUndefined

from stalwart.contracts.model import Contract


class Compact(Contract):
    """A pydantic model whose JSON leaves out fields that hold their empty default."""

    # JSON only: a Python dump keeps every field, for code reading it. This runs once per model in every payload
    # (a step's request holds a dozen), so the loop is kept to a lookup and a comparison per field.
    @model_serializer(mode="wrap", when_used="json")
    def _without_empty_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, default, kind in _empty_defaults(type(self)):
                # The serialized value is the default itself: `None` is not `{}`, and `0` is not `False`.
                value = data.get(name, _ABSENT)
                if type(value) is kind and value == default:
                    del data[name]
        return data


_ABSENT = object()
"""A field not in the serialized data: of no default's type."""


def _is_empty(value: Any) -> bool:
    return value is None or (type(value) in (bool, int, float, str, list, dict) and not value)


@functools.cache
def _empty_defaults(model: type[BaseModel]) -> tuple[tuple[str, Any, type], ...]:
    """The fields of `model` whose default is empty (None, False, 0, "", [] or {}): serialized name, default and
    the default's type."""
    found = []
    for name, field in model.model_fields.items():
        if field.default_factory is not None:
            if field.default_factory_takes_validated_data:
                continue  # its default depends on the other fields: always written
            default = field.default_factory()  # type: ignore[call-arg]
        elif field.default is PydanticUndefined:
            continue
        else:
            default = field.default
        if _is_empty(default):
            found.append((field.serialization_alias or name, default, type(default)))
    return tuple(found)
