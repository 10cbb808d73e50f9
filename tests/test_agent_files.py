"""Agent files: every mistake is reported with the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from stalwart.client.agent_files import AgentFileError, load_agent

from support.repo_paths import AGENTS_DIR


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", sorted(AGENTS_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_example_agent_loads(path):
    assert load_agent(path).name


def test_defaults_are_the_scripted_model_ten_steps_and_no_finalize(tmp_path):
    spec = load_agent(write(tmp_path, 'name = "a"\n'))
    assert (spec.model, spec.budgets.max_steps, spec.budgets.finalize_on_budget) == ("scripted", 10, False)


def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path):
    # Windows editors save UTF-8 with a BOM, which TOML does not take: it was refused at line 1, column 1.
    path = tmp_path / "agent.toml"
    path.write_bytes('name = "bom"\ninstructions = "Réponds en français."\n'.encode("utf-8-sig"))
    spec = load_agent(path)
    assert (spec.name, spec.instructions) == ("bom", "Réponds en français.")


def test_a_missing_file_lists_the_agent_files_next_to_it(tmp_path):
    (tmp_path / "real.toml").write_text('name = "real"\n')
    with pytest.raises(AgentFileError, match=r"no such agent file\. Agent files nearby: .*real\.toml\.$"):
        load_agent(tmp_path / "typo.toml")


def test_a_missing_file_lists_the_agents_folder_but_not_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "helper.toml").write_text('name = "helper"\n')
    with pytest.raises(AgentFileError) as raised:
        load_agent(tmp_path / "helpr.toml")
    assert str(tmp_path / "agents" / "helper.toml") in str(raised.value)
    assert "pyproject.toml" not in str(raised.value)


def test_invalid_toml_names_the_line(tmp_path):
    with pytest.raises(AgentFileError, match=r"agent\.toml: not valid TOML \(.*line 1"):
        load_agent(write(tmp_path, "name = \n"))


def test_a_missing_name_is_required(tmp_path):
    with pytest.raises(AgentFileError, match=r"field `name` is required"):
        load_agent(write(tmp_path, 'instructions = "hi"\n'))


def test_an_unknown_top_level_field_suggests_the_closest(tmp_path):
    with pytest.raises(AgentFileError, match=r"field `tool` is not an agent setting; did you mean `tools`\?"):
        load_agent(write(tmp_path, 'name = "a"\ntool = ["calculator"]\n'))


def test_a_wrong_value_names_the_field_and_the_value(tmp_path):
    with pytest.raises(AgentFileError, match=r"field `budgets.max_parallel_tools`: .* \(got 0\)"):
        load_agent(write(tmp_path, 'name = "a"\n[budgets]\nmax_parallel_tools = 0\n'))


def test_a_bad_agent_name_says_what_a_name_may_contain(tmp_path):
    with pytest.raises(AgentFileError, match=r"field `name`: .*letters, digits"):
        load_agent(write(tmp_path, 'name = "my agent!"\n'))


@pytest.mark.parametrize("field", ["base_url", "mcp_servers.0.http.url", "sub_agents.0.url"])
def test_a_url_holding_a_control_character_is_refused_with_it_shown_escaped(tmp_path, field):
    url = '"http://localhost:8000/v1\\u007f"'
    tables = {
        "base_url": f'model = "ollama:llama3.1"\nbase_url = {url}\n',
        "mcp_servers.0.http.url": f'[[mcp_servers]]\nname = "m"\nurl = {url}\n',
        "sub_agents.0.url": f'[[sub_agents]]\nname = "r"\nurl = {url}\n',
    }
    with pytest.raises(
        AgentFileError, match=rf"field `{field}`: .*/v1\\x7f` names no host, or holds a space or control"
    ):
        load_agent(write(tmp_path, f'name = "a"\n{tables[field]}'))


def test_a_tool_listed_twice_is_refused(tmp_path):
    with pytest.raises(AgentFileError, match=r"tools listed twice: echo"):
        load_agent(write(tmp_path, 'name = "a"\ntools = ["echo", "echo"]\n'))


def test_a_misspelled_field_of_a_scripted_reply_suggests_the_right_one(tmp_path):
    with pytest.raises(AgentFileError, match=r"field `scripted.0.txt` is not an agent setting; did you mean `text`\?"):
        load_agent(write(tmp_path, 'name = "a"\n[[scripted]]\ntxt = "hi"\n'))


@pytest.mark.parametrize(
    ("toml", "field", "meant"),
    [
        (
            '[[sub_agents]]\nname = "helper"\n[sub_agents.spec.budgets]\nmax_step = 3\n',
            "sub_agents.0.spec.budgets.max_step",
            "max_steps",
        ),
        (
            '[[sub_agents]]\nname = "helper"\n[[sub_agents.spec.scripted]]\ntxt = "hi"\n',
            "sub_agents.0.spec.scripted.0.txt",
            "text",
        ),
        ('[[scripted]]\n[[scripted.tool_calls]]\nnam = "echo"\n', "scripted.0.tool_calls.0.nam", "name"),
    ],
    ids=["inline-sub-agent-budgets", "inline-sub-agent-scripted", "scripted-tool-call"],
)
def test_a_misspelled_nested_field_suggests_the_right_one(tmp_path, toml, field, meant):
    with pytest.raises(AgentFileError) as raised:
        load_agent(write(tmp_path, f'name = "a"\n{toml}'))
    assert f"field `{field}` is not an agent setting; did you mean `{meant}`?" in str(raised.value)


def test_an_unknown_nested_field_lists_the_fields_of_that_place(tmp_path):
    with pytest.raises(
        AgentFileError,
        match=r"field `scripted.0.tool_calls.0.qqqqq` is not an agent setting; known fields here: arguments, id, name$",
    ):
        load_agent(write(tmp_path, 'name = "a"\n[[scripted]]\n[[scripted.tool_calls]]\nname = "echo"\nqqqqq = 1\n'))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[budgets]\nmax_seconds = "10"\n', "field `budgets.max_seconds` is the string '10', not a number"),
        ('[loop]\npersistence_nudges = "2"\n', "field `loop.persistence_nudges` is the string '2', not a whole number"),
        ('temperature = "0.5"\n', "drop the quotes: `temperature = 0.5`"),
        ('thrash_guard = "yes"\n', "field `thrash_guard` is the string 'yes', not `true` or `false`"),
        ('[[mcp_servers]]\nname = "s"\ncommand = "x"\nhandshake_seconds = "5"\n', "mcp_servers.0.stdio.handshake"),
    ],
)
def test_a_number_or_boolean_written_as_a_string_is_refused_saying_to_drop_the_quotes(tmp_path, text, said):
    # pydantic read "10" as 10 and "yes" as true: TOML has numbers and booleans, so quotes are a mistake.
    with pytest.raises(AgentFileError, match="TOML writes numbers and booleans without quotes") as raised:
        load_agent(write(tmp_path, f'name = "a"\n{text}'))
    assert said in str(raised.value)


def test_a_clients_json_spec_still_reads_a_quoted_number_as_it_always_has():
    # Another SDK's input, or a run in flight of an older release, must decode as it did: only agent files are strict.
    from stalwart.contracts.agent import AgentSpec

    assert AgentSpec.model_validate({"name": "a", "budgets": {"max_seconds": "10"}}).budgets.max_seconds == 10
