"""The JSON of every `Compact` contract: a field at its empty default is left out, and nothing else is.

`contracts/wire.py` runs once per model of every payload, so it is written for speed; these tests hold it to the
rule its docstring states, over varied instances of every `Compact` contract. A change of its output would change
the bytes of every activity's input and result in history.
"""

from __future__ import annotations

import importlib
import itertools
import json
import pkgutil
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

import stalwart.contracts
from stalwart.contracts.messages import AssistantTurn, ToolResult
from stalwart.contracts.wire import Compact, _empty_defaults

for _module in pkgutil.iter_modules(stalwart.contracts.__path__):
    importlib.import_module(f"stalwart.contracts.{_module.name}")

VALUES: list[Any] = [
    *(None, 0, 1, False, True, 0.0, -0.0, 1.5, "", "x", [], ["x"], {}, {"k": 0}, [0]),
    *(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "tool", "assistant", "done"),
    {"id": "c1", "name": "calculator", "arguments": {"expression": "1 + 1"}},
    {"call_id": "c1", "name": "t", "data": 0},
    {"chain_id": "ch", "segments": 0},
    {"role": "tool", "tool_results": [{"call_id": "c", "name": "n", "data": False}]},
    {"name": "calculator", "fast": True},
    {"name": "a", "model": "scripted"},
    {"agent": {"name": "a", "model": "scripted"}, "tools": []},
    {"sha256": "ab", "chars": 0},
]
"""Candidates for each field: those a field's type accepts make the instances."""


def compact_contracts() -> list[type[Compact]]:
    found, pending = [], list(Compact.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model.__module__.startswith("stalwart."):
            found.append(model)
    return sorted(found, key=lambda model: model.__name__)


def instances(model: type[Compact]) -> list[Compact]:
    """One instance with only the required fields, then one per field and accepted value, then pairs of fields."""
    required: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if field.is_required():
            required[name] = next(value for value in VALUES if _accepts(model, {**required, name: value}, name))
    made = [model.model_validate(required)]
    for name in model.model_fields:
        made += [model.model_validate({**required, name: v}) for v in VALUES if _valid(model, {**required, name: v})]
    for first, second in itertools.combinations(model.model_fields, 2):
        for a, b in itertools.product(VALUES[:15], repeat=2):
            if _valid(model, data := {**required, first: a, second: b}):
                made.append(model.model_validate(data))
    return made


def _accepts(model: type[Compact], data: dict[str, Any], name: str) -> bool:
    try:
        model.model_validate(data)
    except ValidationError as err:
        return not any(error["loc"][:1] == (name,) for error in err.errors())
    return True


def _valid(model: type[Compact], data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("model", compact_contracts(), ids=lambda model: model.__name__)
def test_compact_json_leaves_out_exactly_the_fields_at_their_empty_default(model: type[Compact]):
    empty = {name: default for name, default, _ in _empty_defaults(model)}
    for instance in instances(model):
        written = json.loads(instance.model_dump_json())
        full = instance.model_dump(mode="python")
        assert set(full) == set(model.model_fields), "a Python dump keeps every field"
        for name, value in written.items():
            assert not (name in empty and type(value) is type(empty[name]) and value == empty[name]), (name, written)
        for name in set(full) - set(written):
            assert name in empty, f"{name} is left out of {written} but has no empty default"
            alone = json.loads(instance.model_dump_json(include={name}, exclude_defaults=False) or "{}")
            assert alone == {}, (name, alone)
        assert written == json.loads(instance.model_dump_json()), "the same every time"
        assert instance.model_dump(mode="json") == written, "a JSON-mode dump is the JSON"


class _AnyDefaults(Compact):
    zero: object = 0
    false: object = False
    none: object = None
    text: object = ""


def test_compact_json_tells_none_from_empty_and_zero_from_false():
    assert _AnyDefaults().model_dump_json() == "{}"
    kept = _AnyDefaults(zero=False, false=0, none={}, text=[])
    assert kept.model_dump_json() == '{"zero":false,"false":0,"none":{},"text":[]}'
    assert _AnyDefaults(zero=0.0, false=None).model_dump_json() == '{"zero":0.0,"false":null}'
    assert ToolResult(call_id="c", name="n").model_dump_json() == '{"call_id":"c","name":"n"}'
    assert ToolResult(call_id="c", name="n", data={}).model_dump_json() == '{"call_id":"c","name":"n","data":{}}'
    assert ToolResult(call_id="c", name="n", data=0).model_dump_json() == '{"call_id":"c","name":"n","data":0}'
    assert ToolResult(call_id="c", name="n", data=False).model_dump_json() == '{"call_id":"c","name":"n","data":false}'
    turn = AssistantTurn(text="", usage={"input_tokens": 0, "cost_usd": -0.0})
    assert turn.model_dump_json() == '{"usage":{}}'
