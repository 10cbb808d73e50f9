"""Sub-agents in agent files: `file` is read relative to the declaring file into the run's input; cycles are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from stalwart.client.agent_files import AgentFileError, load_agent, parse_agent

from support.repo_paths import AGENTS_DIR


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_sub_agent_file_is_read_relative_to_the_file_that_declares_it(tmp_path):
    write(tmp_path / "team" / "child.toml", 'name = "child"\ndescription = "Helps."\n')
    lead = write(
        tmp_path / "team" / "lead.toml", 'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "child.toml"\n'
    )
    [sub] = load_agent(lead).sub_agents
    assert (sub.file, sub.spec.name, sub.spec.description) == ("child.toml", "child", "Helps.")


def test_sub_agent_files_nest(tmp_path):
    write(tmp_path / "a.toml", 'name = "a"\n[[sub_agents]]\nname = "b"\nfile = "sub/b.toml"\n')
    write(tmp_path / "sub" / "b.toml", 'name = "b"\n[[sub_agents]]\nname = "c"\nfile = "c.toml"\n')
    write(tmp_path / "sub" / "c.toml", 'name = "c"\n')
    assert load_agent(tmp_path / "a.toml").sub_agents[0].spec.sub_agents[0].spec.name == "c"


def test_a_cycle_of_sub_agent_files_is_refused_naming_the_files(tmp_path):
    write(tmp_path / "lead.toml", 'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "child.toml"\n')
    write(tmp_path / "child.toml", 'name = "child"\n[[sub_agents]]\nname = "boss"\nfile = "lead.toml"\n')
    with pytest.raises(AgentFileError) as caught:
        load_agent(tmp_path / "lead.toml")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'child.toml'}: field `sub_agents.0.file` = 'lead.toml'")
    assert "(lead.toml -> child.toml -> lead.toml)" in message


def test_a_missing_sub_agent_file_names_the_field_and_the_path_looked_at(tmp_path):
    lead = write(tmp_path / "lead.toml", 'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "nobody.toml"\n')
    with pytest.raises(AgentFileError, match=r"field `sub_agents.0.file`: no agent file .*nobody.toml"):
        load_agent(lead)


def test_a_problem_in_a_sub_agent_file_is_told_against_that_file_at_its_place_there(tmp_path):
    write(tmp_path / "sub" / "child.toml", 'name = "child"\ntemprature = 1\n')
    lead = write(tmp_path / "lead.toml", 'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "sub/child.toml"\n')
    with pytest.raises(AgentFileError) as caught:
        load_agent(lead)
    assert str(caught.value) == (
        f"{tmp_path / 'sub' / 'child.toml'}: field `temprature` is not an agent setting; did you mean `temperature`?"
    )


def test_a_missing_schema_file_of_a_sub_agent_file_is_named_as_that_file_writes_it(tmp_path):
    child = write(tmp_path / "sub" / "child.toml", 'name = "child"\n[output]\nschema_file = "answer.json"\n')
    lead = write(tmp_path / "lead.toml", 'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "sub/child.toml"\n')
    with pytest.raises(AgentFileError) as caught:
        load_agent(lead)
    assert str(caught.value).startswith(f"{child}: field `output.schema_file`: no JSON file")


def test_a_sub_agent_file_names_itself_it_does_not_take_the_sub_agents_name(tmp_path):
    write(tmp_path / "child.toml", 'description = "Helps."\n')
    lead = write(tmp_path / "lead.toml", 'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "child.toml"\n')
    with pytest.raises(AgentFileError, match=r"child.toml: field `name` is required"):
        load_agent(lead)


def test_stdio_servers_run_in_the_directory_of_the_file_that_declares_them(tmp_path):
    server = '[[mcp_servers]]\nname = "s"\ncommand = "python"\ncwd = "tools"\n'
    write(tmp_path / "sub" / "child.toml", f'name = "child"\n{server}')
    lead = write(
        tmp_path / "lead.toml",
        'name = "lead"\n[[sub_agents]]\nname = "helper"\nfile = "sub/child.toml"\n'
        '[[sub_agents]]\nname = "inline"\n[[sub_agents.spec.mcp_servers]]\nname = "t"\ncommand = "python"\n',
    )
    child, inline = load_agent(lead).sub_agents
    assert child.spec.mcp_servers[0].cwd == str(tmp_path.resolve() / "sub" / "tools")
    assert inline.spec.mcp_servers[0].cwd == str(tmp_path.resolve())


def test_a_sub_agent_that_says_nothing_about_who_it_is_is_refused_with_the_fix():
    with pytest.raises(AgentFileError, match=r'field `sub_agents.0`: .*set `file = "helper.toml"`'):
        parse_agent({"name": "lead", "sub_agents": [{"name": "helper"}]})


def test_an_inline_sub_agent_takes_the_sub_agents_name():
    spec = parse_agent(
        {"name": "lead", "sub_agents": [{"name": "helper", "mode": "single", "spec": {"instructions": "Summarise."}}]}
    )
    assert spec.sub_agents[0].spec.name == "helper"


async def test_the_shipped_researcher_answers_a_lead_that_declares_it_by_file(tmp_path, stalwart, worker_with):
    lead = write(
        tmp_path / "lead.toml",
        f"""name = "lead"
[[sub_agents]]
name = "researcher"
file = "{AGENTS_DIR / "researcher.toml"}"

[[scripted]]
tool_calls = [{{ name = "researcher", arguments = {{ task = "What is a qubit?" }} }}]

[[scripted]]
text = "Done."
""",
    )
    async with worker_with():
        result = await stalwart.run(lead, "Explain qubits")
    assert result.steps[2].result.startswith("Quantum computers use qubits")
