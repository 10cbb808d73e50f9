"""The JSON Schema subset a run validates typed output against (contracts/output_schema.py): pure functions."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from stalwart.contracts.output_schema import (
    answer_value,
    schema_of,
    schema_problems,
    strict_compatible,
    validation_errors,
)
from stalwart.contracts.patterns import LINEAR_FIX, PatternError


class Line(BaseModel):
    sku: str
    quantity: int = 1


class Order(BaseModel):
    id: str
    lines: list[Line]
    note: str | None = None


ORDER = schema_of(Order)


def test_a_pydantic_models_schema_validates_a_fitting_value():
    assert validation_errors({"id": "A", "lines": [{"sku": "x"}], "note": None}, ORDER) == []


def test_errors_name_the_place_of_each_problem_through_refs():
    errors = validation_errors({"id": 1, "lines": [{"sku": "x", "quantity": 1.5}, {}]}, ORDER)
    assert errors == [
        "`$.id`: expected string, got a number 1",
        "`$.lines[0].quantity`: expected integer, got a number 1.5",
        "`$.lines[1]`: missing required property sku",
    ]


@pytest.mark.parametrize(
    ("schema", "value", "said"),
    [
        ({"type": "integer"}, True, "expected integer, got a boolean"),
        ({"type": "number"}, "1", "expected number, got a string"),
        ({"enum": ["a", "b"]}, "c", 'is not one of ["a", "b"]'),
        ({"enum": [1]}, True, "is not one of [1]"),
        ({"const": 0}, False, "should be 0"),
        ({"type": "string", "minLength": 2}, "a", "fewer than the 2 required"),
        ({"type": "string", "pattern": "^[A-Z]-"}, "a-1", "does not match the pattern"),
        ({"minimum": 0}, -1, "less than the minimum 0"),
        ({"exclusiveMaximum": 10}, 10, "should be less than 10"),
        ({"multipleOf": 0.01}, 0.005, "is not a multiple of 0.01"),
        ({"type": "array", "maxItems": 1}, [1, 2], "more than the 1 allowed"),
        ({"type": "array", "uniqueItems": True}, [1, 1.0], "more than once"),
        ({"type": "array", "prefixItems": [{"type": "string"}]}, [1], "`$[0]`: expected string"),
        ({"properties": {"a": {}}, "additionalProperties": False}, {"b": 1}, "property 'b' is not allowed"),
        ({"additionalProperties": {"type": "integer"}}, {"b": "x"}, "`$.b`: expected integer"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 3, "matches none of the 2 allowed shapes"),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 3, "matches 2 of the shapes of `oneOf`"),
        ({"not": {"type": "null"}}, None, "matches a shape that is not allowed"),
        ({"type": "object", "properties": {"a b": {"type": "integer"}}}, {"a b": "x"}, '`$["a b"]`'),
    ],
)
def test_each_keyword_says_what_does_not_fit(schema, value, said):
    [error] = validation_errors(value, schema)
    assert said in error


def test_nullable_lets_null_through():
    assert validation_errors(None, {"type": "string", "nullable": True}) == []


def test_an_integer_written_with_a_point_is_an_integer():
    assert validation_errors(2.0, {"type": "integer"}) == []


def test_the_answer_may_come_in_a_json_fence():
    assert answer_value('```json\n{"a": 1}\n```') == ({"a": 1}, None)


@pytest.mark.parametrize("text", ["Sure! {}", "NaN", "[1e999]", ""])
def test_text_that_holds_no_json_value_is_said_to(text):
    value, problem = answer_value(text)
    assert value is None and problem is not None and problem.startswith("the answer is not JSON")


def test_a_schema_is_strict_only_when_every_object_is_closed_and_fully_required():
    closed = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {}}, "required": ["b"]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert not strict_compatible(closed)  # the inner object is open
    closed["properties"]["a"]["additionalProperties"] = False
    assert strict_compatible(closed)
    assert not strict_compatible(ORDER)  # pydantic leaves objects open and `note` optional


def test_a_schema_with_a_keyword_strict_mode_refuses_is_not_strict():
    closed = {"type": "object", "properties": {"a": {}}, "required": ["a"], "additionalProperties": False}
    assert strict_compatible(closed)
    assert not strict_compatible({**closed, "properties": {"a": {"type": "string", "maxLength": 200}}})


def test_a_pydantic_schema_is_a_schema():
    assert schema_problems(ORDER) == []


def test_an_extension_keyword_is_left_alone_but_a_misspelt_one_is_not():
    assert schema_problems({"type": "string", "x-widget": "textarea", "examples": ["a"]}) == []
    assert schema_problems({"type": "object", "requird": []}) == [
        "`#`: `requird` is no JSON Schema keyword; did you mean `required`?"
    ]


def test_a_pattern_that_backtracks_catastrophically_in_python_is_searched_in_linear_time():
    """Python's `re` takes about 2**n steps for `(a+)+$` against n a's and a b; the workflow task would never end."""
    [error] = validation_errors("a" * 5000 + "b", {"type": "string", "pattern": "(a+)+$"})
    assert error.endswith("does not match the pattern '(a+)+$'")


@pytest.mark.parametrize("pattern", ["(?=a)(a+)+$", "^(?!admin)", "(?<=x)y", r"(a)\1"])
def test_a_pattern_only_a_backtracking_engine_runs_is_no_schema(pattern):
    """A lookaround or a backreference needs backtracking: refused with the fix, never searched with Python's `re`."""
    [problem] = schema_problems({"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}})
    assert problem.startswith(f"`#.properties.v.pattern` = {pattern!r} cannot run on the linear-time regex engine")
    assert problem.endswith(f"; {LINEAR_FIX}")


def test_a_pattern_properties_key_only_a_backtracking_engine_runs_is_no_schema():
    [problem] = schema_problems({"type": "object", "patternProperties": {"^(?!x)": {"type": "string"}}})
    assert problem.startswith("`#.patternProperties` key '^(?!x)' cannot run on the linear-time regex engine")
    assert problem.endswith(LINEAR_FIX)


def test_a_pattern_properties_key_that_is_no_regex_is_no_schema():
    [problem] = schema_problems({"type": "object", "patternProperties": {"(": {}}})
    assert problem == "`#.patternProperties` key '(' is not a regular expression (unclosed group)"


def test_a_pattern_properties_key_is_searched_in_linear_time():
    schema = {"type": "object", "patternProperties": {"(a+)+$": {"type": "integer"}}}
    [error] = validation_errors({"a" * 5000 + "a": "x", "a" * 5000 + "b": "y"}, schema)
    assert "expected integer" in error


def test_a_pattern_that_slipped_past_the_checks_is_refused_not_run_with_pythons_re():
    with pytest.raises(PatternError, match=LINEAR_FIX):
        validation_errors("admin", {"type": "string", "pattern": "^(?!admin)"})
