"""An output schema whose `$ref`s (or `allOf`, `anyOf` ...) come back to where they started without going down into
a part of the value is refused where the schema is validated: checking an answer against it would never end, and
the run blamed every answer for nesting too deeply. A recursive schema through `properties` or `items` (a tree)
stays a schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from stalwart.client.agent_files import AgentFileError, load_agent
from stalwart.contracts.output_schema import schema_of, schema_problems, validation_errors

LOOPS: dict[str, tuple[dict[str, Any], str]] = {
    # name: (schema; the loop the refusal names)
    "a-def-that-is-its-own-ref": (
        {"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
        "`#/$defs/A` -> `#/$defs/A` is a loop",
    ),
    "two-defs-that-refer-to-each-other": (
        {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
        "`#/$defs/A` -> `#/$defs/B` -> `#/$defs/A` is a loop",
    ),
    "a-loop-through-all-of": (
        {"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}, "$ref": "#/$defs/A"},
        "`#/$defs/A` -> `#/$defs/A/allOf/0` -> `#/$defs/A` is a loop",
    ),
    "the-root-through-any-of": ({"anyOf": [{"type": "null"}, {"$ref": "#"}]}, "`#` -> `#/anyOf/1` -> `#` is a loop"),
    "the-root-through-not": ({"type": "object", "not": {"$ref": "#"}}, "`#` -> `#/not` -> `#` is a loop"),
    "a-loop-no-answer-reaches": ({"type": "integer", "$defs": {"A": {"$ref": "#/$defs/A"}}}, "`#/$defs/A`"),
}


@pytest.mark.parametrize("name", sorted(LOOPS), ids=sorted(LOOPS))
def test_a_ref_loop_with_nothing_in_between_is_no_schema_and_the_refusal_names_it(name):
    schema, said = LOOPS[name]
    [problem] = schema_problems(schema)
    assert problem.startswith(said)
    assert "goes down through an object's `properties` or an array's `items`" in problem


def test_an_agent_file_with_a_ref_loop_is_refused_before_a_run(tmp_path: Path):
    path = tmp_path / "loopy.toml"
    path.write_text(
        'name = "loopy"\n[output.schema]\n"$ref" = "#/$defs/A"\n[output.schema."$defs".A]\n"$ref" = "#/$defs/A"\n'
    )
    with pytest.raises(AgentFileError, match="`#/\\$defs/A` -> `#/\\$defs/A` is a loop"):
        load_agent(path)


class Node(BaseModel):
    name: str
    children: list[Node] = []
    parent: Node | None = None


TREES: dict[str, tuple[dict[str, Any], Any]] = {
    # name: (a recursive schema that goes down into the value; a value deep enough to recurse)
    "the-root-through-a-property": (
        {"type": "object", "properties": {"child": {"$ref": "#"}}},
        {"child": {"child": {}}},
    ),
    "a-def-through-array-items": (
        {"$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}}, "$ref": "#/$defs/T"},
        [[], [[]]],
    ),
    "a-pydantic-model-of-a-tree": (schema_of(Node), {"name": "a", "children": [{"name": "b", "parent": None}]}),
    "an-optional-child-through-any-of": (
        {"type": "object", "properties": {"next": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}}},
        {"next": {"next": None}},
    ),
}


@pytest.mark.parametrize("name", sorted(TREES), ids=sorted(TREES))
def test_a_recursive_schema_that_goes_down_into_the_value_stays_a_schema(name):
    schema, value = TREES[name]
    assert schema_problems(schema) == []
    assert validation_errors(value, schema) == []
