"""Teams of agent files: a file named many times is read once, and a team too large or too deep for a run's input
is refused at once, naming the limit, the file and the chain of agents (a bug bash's fan-out of 25 small files
hung `stalwart check` with memory growing; a chain of 70 files passed check and failed the run as invalid JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.common import RawValue

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.client import agent_files
from stalwart.client.agent_files import MAX_TEAM_BYTES, AgentFileError, load_agent
from stalwart.contracts.agent import MAX_AGENT_DEPTH, MAX_NESTING, AgentSpec
from stalwart.workflows.arguments import decoded_run_input


def fan(tmp_path: Path, files: int) -> Path:
    """`files` agent files, each naming the next one twice: 2**files agents once read in."""
    for n in range(files):
        subs = "".join(f'[[sub_agents]]\nname = "{tool}"\nfile = "f{n + 1}.toml"\n' for tool in "xy")
        (tmp_path / f"f{n}.toml").write_text(f'name = "f{n}"\n' + (subs if n + 1 < files else ""))
    return tmp_path / "f0.toml"


def chain(tmp_path: Path, files: int) -> Path:
    """`files` agent files, each naming the next one as its sub-agent."""
    for n in range(files):
        sub = f'[[sub_agents]]\nname = "n{n + 1}"\nfile = "n{n + 1}.toml"\n' if n + 1 < files else ""
        (tmp_path / f"n{n}.toml").write_text(f'name = "n{n}"\n{sub}')
    return tmp_path / "n0.toml"


def inline_chain(levels: int) -> dict:
    spec: dict = {"name": f"n{levels - 1}"}
    for n in range(levels - 2, -1, -1):
        spec = {"name": f"n{n}", "sub_agents": [{"name": f"n{n + 1}", "spec": spec}]}
    return spec


def test_a_sub_agent_file_named_many_times_is_read_once(tmp_path, monkeypatch):
    read: list[Path] = []
    real = agent_files._read_toml
    monkeypatch.setattr(agent_files, "_read_toml", lambda path: read.append(path) or real(path))
    spec = load_agent(fan(tmp_path, 8))
    assert len(read) == 8
    assert spec.sub_agents[1].spec.sub_agents[0].spec.name == "f2"


def test_a_team_that_fans_out_past_a_runs_input_is_refused_naming_the_limit_and_the_file(tmp_path):
    with pytest.raises(AgentFileError) as raised:
        load_agent(fan(tmp_path, 25))
    said = str(raised.value)
    assert f"at most {MAX_TEAM_BYTES // 1_000_000} MB" in said
    assert said.startswith(str(tmp_path / "f7.toml"))
    assert "reached by f0.toml > f1.toml" in said and "name each file fewer times" in said


def test_an_error_in_a_file_named_twice_is_told_against_that_file(tmp_path):
    (tmp_path / "leaf.toml").write_text('name = "leaf"\ntemperatur = 1\n')
    (tmp_path / "top.toml").write_text(
        'name = "top"\n[[sub_agents]]\nname = "a"\nfile = "leaf.toml"\n[[sub_agents]]\nname = "b"\nfile = "leaf.toml"\n'
    )
    with pytest.raises(AgentFileError) as raised:
        load_agent(tmp_path / "top.toml")
    assert f"{tmp_path / 'leaf.toml'}: field `temperatur` is not an agent setting" in str(raised.value)


def test_a_chain_of_agent_files_as_deep_as_the_limit_loads(tmp_path):
    spec = load_agent(chain(tmp_path, MAX_AGENT_DEPTH))
    assert spec.sub_agents[0].spec.name == "n1"


@pytest.mark.parametrize("files", [70, 300])
def test_a_chain_of_agent_files_too_deep_is_refused_naming_the_depth_the_limit_and_the_agents(tmp_path, files):
    with pytest.raises(AgentFileError) as raised:
        load_agent(chain(tmp_path, files))
    said = str(raised.value)
    assert f"sub-agents nest at least {MAX_AGENT_DEPTH + 1} levels deep (n0 > n1 > n2 > … >" in said
    assert f"at most {MAX_AGENT_DEPTH} levels of agents" in said


def test_a_python_spec_too_deep_is_refused_naming_the_depth_and_the_agents():
    spec = AgentSpec(name="leaf")
    for n in range(MAX_AGENT_DEPTH - 1):
        spec = AgentSpec(name=f"a{n}", sub_agents=[spec])
    with pytest.raises(ValidationError, match=rf"nest {MAX_AGENT_DEPTH + 1} levels deep \(top > a30 > a29 > …"):
        AgentSpec(name="top", sub_agents=[spec])


def test_a_spec_far_too_deep_is_refused_as_too_deep_not_as_a_recursion_error():
    with pytest.raises(
        ValidationError, match=r"sub-agents nest 300 levels deep \(n0 > n1 > n2 > … > n297 > n298 > n299\)"
    ):
        AgentSpec.model_validate(inline_chain(300))


def test_a_json_run_input_too_deep_is_refused_by_the_run_naming_the_depth():
    # 40 levels still parse as JSON (68 did not): the run's own decoding now says what is wrong.
    converter = stalwart_converter().payload_converter
    payload = converter.to_payloads([{"agent": inline_chain(40), "goal": "hi"}])[0]
    value, reason = decoded_run_input(RawValue(payload), converter)
    assert value is None
    assert (
        f"sub-agents nest 40 levels deep (n0 > n1 > n2 > … > n37 > n38 > n39); a team has at most {MAX_AGENT_DEPTH}"
        in reason
    )


def test_a_team_as_deep_as_the_limit_decodes_as_a_runs_input_with_its_deepest_settings_nested_to_theirs():
    # The limit sits below what the run's JSON decoding takes (200 levels), with room for the deepest agent's own
    # settings: `[extra]` nested as deep as an agent file may nest.
    extra: dict = {}
    for _ in range(MAX_NESTING - 1):
        extra = {"a": extra}
    team = inline_chain(MAX_AGENT_DEPTH)
    leaf = team
    while "sub_agents" in leaf:
        leaf = leaf["sub_agents"][0]["spec"]
    leaf["extra"] = extra
    converter = stalwart_converter().payload_converter
    payload = converter.to_payloads([{"agent": team, "goal": "hi"}])[0]
    value, reason = decoded_run_input(RawValue(payload), converter)
    assert reason is None and value is not None
