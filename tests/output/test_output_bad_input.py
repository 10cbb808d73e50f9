"""Issue 42, item 4: typed output that cannot work is refused with one clear error at `check` or at start, never
a wedged run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NewType

import pytest
from pydantic import Field, ValidationError

from stalwart import tool
from stalwart.client.agent_files import AgentFileError, load_agent
from stalwart.client.cli import EXIT_OK, EXIT_USAGE, main
from stalwart.contracts.agent import AgentSpec, OutputSpec
from stalwart.contracts.errors import UsageError
from stalwart.contracts.output_schema import OutputTypeError

GOOD_SCHEMA = '[output.schema]\ntype = "object"\nrequired = ["n"]\n[output.schema.properties.n]\ntype = "integer"\n'

BAD_FILES: dict[str, tuple[str, str]] = {
    # name: (what follows `name = "a"` in the file; what the error must say)
    "type-misspelt": ('[output.schema]\ntype = "integr"\n', "'integr' is no JSON type; did you mean 'integer'?"),
    "schema-not-a-table": ('[output]\nschema = "an object"\n', "a schema is a table (JSON object), not a string"),
    "keyword-misspelt": ('[output.schema]\ntype = "object"\npropertes = {}\n', "did you mean `properties`?"),
    "required-not-a-list": ('[output.schema]\ntype = "object"\nrequired = "n"\n', "`#.required` should be a list"),
    "property-not-a-schema": ("[output.schema.properties]\nn = 3\n", "`#.properties.n` should be a schema"),
    "pattern-not-a-regex": ('[output.schema]\ntype = "string"\npattern = "("\n', "is not a regular expression"),
    "pattern-with-a-lookaround": (
        "[output.schema]\ntype = \"string\"\npattern = '(?=a)(a+)+$'\n",
        "`#.pattern` = '(?=a)(a+)+$' cannot run on the linear-time regex engine (look-around, including look-ahead "
        "and look-behind, is not supported); rewrite it without lookarounds or backreferences: patterns run in "
        "linear time so a reply cannot stall the worker",
    ),
    "ref-to-nowhere": ('[output.schema]\n"$ref" = "#/$defs/Gone"\n', "points nowhere in the schema"),
    "retries-too-many": ("[output]\nretries = 11\n" + GOOD_SCHEMA, "output.retries`: out of range (got 11)"),
    "retries-negative": ("[output]\nretries = -1\n" + GOOD_SCHEMA, "output.retries`: out of range (got -1)"),
    "retries-boolean": ("[output]\nretries = true\n" + GOOD_SCHEMA, "not the boolean `true`"),
    "no-schema": ("[output]\nretries = 1\n", "[output] needs the answer's JSON Schema"),
    "both-schema-and-file": (
        '[output]\nschema_file = "s.json"\n' + GOOD_SCHEMA,
        "sets both `schema` and `schema_file`; keep one of them",
    ),
    "schema-file-missing": ('[output]\nschema_file = "gone.json"\n', "no JSON file"),
    "schema-file-not-json": ('[output]\nschema_file = "notes.txt"\n', "is not JSON"),
    "schema-file-not-a-schema": ('[output]\nschema_file = "list.json"\n', "holds a JSON list, not a JSON Schema"),
    "unknown-field": ("[output]\nretry = 3\n" + GOOD_SCHEMA, "did you mean `retries`?"),
    "name-not-a-tool-name": ('[output]\nname = "final answer"\n' + GOOD_SCHEMA, "it becomes a tool name"),
}


@pytest.fixture(params=sorted(BAD_FILES), ids=sorted(BAD_FILES))
def bad_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    body, said = BAD_FILES[request.param]
    (tmp_path / "notes.txt").write_text("not { json")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "s.json").write_text(json.dumps({"type": "object"}))
    path = tmp_path / "agent.toml"
    path.write_text(f'name = "a"\n{body}')
    return path, said


def test_a_bad_output_in_an_agent_file_is_one_clean_error_at_check(bad_file, capsys):
    path, said = bad_file
    assert main(["check", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert said in err
    assert "Traceback" not in err


def test_a_bad_output_in_an_agent_file_is_refused_before_a_run_starts(bad_file):
    path, said = bad_file
    with pytest.raises(AgentFileError) as refused:
        load_agent(path)
    assert said in str(refused.value)


def test_check_prints_the_output_schema(tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text('name = "a"\n[output]\nretries = 3\n' + GOOD_SCHEMA)
    assert main(["check", str(path)]) == EXIT_OK
    out, err = capsys.readouterr()
    assert json.loads(out)["output"]["schema"]["properties"] == {"n": {"type": "integer"}}
    assert "asked for again up to 3 time(s)" in err


def test_a_schema_file_is_read_into_the_spec_relative_to_the_agent_file(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "refund.json").write_text(json.dumps({"type": "array", "items": {"type": "integer"}}))
    (tmp_path / "agent.toml").write_text('name = "a"\n[output]\nschema_file = "schemas/refund.json"\n')
    output = load_agent(tmp_path / "agent.toml").output
    assert output is not None
    assert (output.schema_, output.schema_file) == (
        {"type": "array", "items": {"type": "integer"}},
        "schemas/refund.json",
    )


class NotPydantic:
    """A plain class: pydantic builds no schema for it."""


def test_a_type_pydantic_cannot_build_a_schema_for_is_a_usage_error():
    with pytest.raises(OutputTypeError, match="cannot be an agent's output: pydantic builds no JSON Schema") as err:
        OutputSpec.for_type(NotPydantic)
    assert isinstance(err.value, UsageError)


def plain_function(order_id: str, amount: float) -> str:
    return order_id


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: the order's id
    """
    return order_id


@dataclass
class Refund:
    amount: float


NOT_TYPES: dict[str, tuple[Any, str]] = {
    # name: (what was given as the output; what the error says of it)
    "a-function": (plain_function, "`plain_function` cannot be an agent's output: it is a function"),
    "a-builtin": (len, "`len` cannot be an agent's output: it is a function"),
    "a-tool": (lookup_order, "`lookup_order` cannot be an agent's output: it is a @tool"),
    "a-dataclass-instance": (
        Refund(1.0),
        "Refund(amount=1.0) cannot be an agent's output: it is an instance of Refund",
    ),
    "a-number": (3, "3 cannot be an agent's output: it is an instance of int, not a type"),
    "a-string": ("Refund", "'Refund' cannot be an agent's output: it is a string"),
}


@pytest.mark.parametrize("given", sorted(NOT_TYPES), ids=sorted(NOT_TYPES))
def test_an_output_that_is_no_type_is_refused_saying_to_give_a_type(given):
    value, said = NOT_TYPES[given]
    with pytest.raises(OutputTypeError) as refused:
        AgentSpec(name="a", output=value)
    assert str(refused.value).startswith(said)
    assert "give the type of the answer itself" in str(refused.value)
    assert isinstance(refused.value, UsageError)


def test_an_agent_given_such_a_type_is_refused_as_it_is_built():
    with pytest.raises(OutputTypeError, match="NotPydantic"):
        AgentSpec(name="a", output=NotPydantic)


def test_a_schema_over_the_size_limit_is_refused():
    huge = {"type": "object", "description": "x" * 1_000_001}
    with pytest.raises(ValidationError, match="over the 1,000,000 an output schema may take"):
        OutputSpec(schema=huge)


def test_an_unknown_structured_output_mode_is_refused():
    with pytest.raises(ValidationError, match="`extra.structured_output` says how \\[output\\] is asked for"):
        AgentSpec(name="a", extra={"structured_output": "json"})


def test_an_output_named_as_one_of_the_agents_tools_is_refused(tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text('name = "a"\ntools = ["calculator"]\n[output]\nname = "calculator"\n' + GOOD_SCHEMA)
    assert main(["check", str(path)]) == EXIT_USAGE
    assert "[output] name 'calculator' is also the name of one of the agent's tools" in capsys.readouterr().err


@pytest.mark.parametrize(
    "tp",
    [Any, Literal["a", "b"], NewType("OrderId", str), Annotated[int, Field(gt=0)], int | None, list[Refund]],
    ids=["any", "literal", "newtype", "annotated", "union", "generic"],
)
def test_typing_forms_that_are_no_class_are_still_output_types(tp):
    assert AgentSpec(name="a", output=tp).output is not None
