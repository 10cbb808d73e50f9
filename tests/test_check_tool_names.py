"""`stalwart check` and the tool names it can know without a worker: the built-in tools and their parameters.

A misspelt built-in (`calculater`) passed check as "a tool the worker registers" and the run failed with
UnknownToolError; `[bindings.calculator] expressio = ...` passed check and the run refused it with BindingError.
"""

from __future__ import annotations

from pathlib import Path

from stalwart.client.cli import EXIT_OK, EXIT_USAGE, main
from stalwart.client.tool_names import BUILTIN_TOOLS
from stalwart.workers.plugin import default_tool_registry


def check(tmp_path: Path, capsys, text: str) -> tuple[int, str]:
    path = tmp_path / "agent.toml"
    path.write_text(f'name = "a"\n{text}')
    code = main(["check", str(path)])
    return code, capsys.readouterr().err


def test_the_built_in_tools_check_knows_are_those_every_worker_registers():
    registry = default_tool_registry()
    registered = {name: tuple(registry.get(name).spec().parameters["properties"]) for name in registry.names()}
    assert registered == BUILTIN_TOOLS


def test_a_tool_name_close_to_a_built_in_one_is_shown_with_the_built_in_it_may_mean(tmp_path, capsys):
    code, err = check(tmp_path, capsys, 'tools = ["calculater"]\n')
    assert code == EXIT_OK  # a worker may register a tool of that name: no error, but the nearest built-in is named
    said = "calculater  (a tool the worker registers; no built-in tool has that name: did you mean `calculator`?)"
    assert said in err


def test_a_built_in_tool_and_a_name_close_to_none_are_shown_as_before(tmp_path, capsys):
    code, err = check(tmp_path, capsys, 'tools = ["calculator", "lookup_order"]\n')
    assert code == EXIT_OK
    assert "calculator  (a tool the worker registers)\n" in err
    assert "lookup_order  (a tool the worker registers)\n" in err


def test_a_binding_of_a_parameter_a_built_in_tool_does_not_take_is_refused_with_the_nearest(tmp_path, capsys):
    code, err = check(tmp_path, capsys, 'tools = ["calculator"]\n[bindings.calculator]\nexpressio = "expr"\n')
    assert code == EXIT_USAGE
    assert (
        "field `bindings.calculator` binds parameter(s) expressio that the built-in tool calculator does not take "
        "(its parameters: expression), which a run refuses: did you mean `expression`?"
    ) in err


def test_a_binding_of_a_built_in_tools_parameter_passes(tmp_path, capsys):
    code, err = check(tmp_path, capsys, 'tools = ["calculator"]\n[bindings.calculator]\nexpression = "expr"\n')
    assert code == EXIT_OK, err


def test_a_binding_in_a_sub_agent_is_checked_and_named_at_its_place(tmp_path, capsys):
    sub = '[[sub_agents]]\nname = "s"\n[sub_agents.spec]\ntools = ["echo"]\n'
    sub += '[sub_agents.spec.bindings.echo]\ntxt = "t"\n'
    code, err = check(tmp_path, capsys, sub)
    assert code == EXIT_USAGE
    assert "field `sub_agents.0.spec.bindings.echo` binds parameter(s) txt" in err and "did you mean `text`?" in err


def test_a_misspelt_tool_in_require_approval_is_refused_with_the_tool_it_may_mean(tmp_path, capsys):
    code, err = check(tmp_path, capsys, 'tools = ["calculator"]\nrequire_approval = ["calculater"]\n')
    assert code == EXIT_USAGE
    assert "(did you mean `calculator` for calculater?)" in err
