"""`require_approval` and `[bindings]` that name a tool the agent does not have are refused, never ignored.

A misspelt name in `require_approval` is the dangerous case: ignored, it let the tool it meant run with nobody's
approval. The agent file is refused by `stalwart check` and by the client before the run starts; a run started
another way (any Temporal client, or an agent whose MCP servers only a run lists) ends with `error` before any
tool runs.
"""

from __future__ import annotations

import json
import uuid

import pytest
from mcp_test_servers import stdio_demo

from stalwart.activities.tools import tool
from stalwart.client.api import InvalidRunInput
from stalwart.client.cli import EXIT_USAGE, main
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult

deleted: list[str] = []


@tool(side_effecting=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    deleted.append(path)
    return f"deleted {path}"


def _deleter(**overrides: object) -> AgentSpec:
    fields: dict[str, object] = {
        "name": "janitor",
        "tools": ["delete_file"],
        "require_approval": ["delete_files"],
        "scripted": [
            ScriptedReply(tool_calls=[ScriptedToolCall(name="delete_file", arguments={"path": "/data"}, id="rm")]),
            ScriptedReply(text="Deleted."),
        ],
    }
    return AgentSpec.model_validate({**fields, **overrides})


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('tools = ["calculator"]\nrequire_approval = ["calculater"]\n', "`require_approval` names tool(s) calculater"),
        ('tools = ["calculator"]\n[bindings.calc]\nexpression = "e"\n', "`[bindings]` names tool(s) calc"),
    ],
    ids=["require-approval", "bindings"],
)
def test_check_refuses_a_file_naming_a_tool_the_agent_does_not_have(tmp_path, capsys, table, named):
    path = tmp_path / "a.toml"
    path.write_text(f'name = "a"\n{table}')
    code = main(["check", str(path)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert str(path) in err and named in err and "its tools: calculator" in err


@pytest.mark.parametrize(("approved", "code"), [("ad", EXIT_USAGE), ("add", 0)], ids=["misspelt", "right"])
def test_check_lists_the_mcp_servers_tools_and_judges_require_approval_by_them(tmp_path, capsys, approved, code):
    server = stdio_demo()
    path = tmp_path / "a.toml"
    path.write_text(
        f'name = "a"\nrequire_approval = ["{approved}"]\n[[mcp_servers]]\nname = "demo"\n'
        f"command = {json.dumps(server.command)}\nargs = {json.dumps(server.args)}\n"
    )
    assert main(["check", str(path)]) == code
    err = capsys.readouterr().err
    if code:
        assert "`require_approval` names tool(s) ad " in err and "add" in err.partition("its tools: ")[2]
    else:
        assert "add  (MCP server 'demo')" in err


def test_check_accepts_approval_for_a_sub_agent(tmp_path, capsys):
    path = tmp_path / "a.toml"
    path.write_text('name = "a"\nrequire_approval = ["helper"]\n[[sub_agents]]\nname = "helper"\nspec = { }\n')
    assert main(["check", str(path)]) == 0


async def test_the_client_refuses_to_start_a_run_whose_approval_names_a_missing_tool(stalwart):
    with pytest.raises(InvalidRunInput, match="`require_approval` names tool\\(s\\) delete_files"):
        await stalwart.start(_deleter(), "clean up")


async def test_a_run_started_by_another_client_ends_before_the_misspelt_tool_runs(
    time_skipping_env, task_queue, worker_with
):
    deleted.clear()
    raw = {"agent": _deleter().model_dump(mode="json"), "goal": "clean up"}
    async with worker_with(delete_file):
        result = await time_skipping_env.client.execute_workflow(
            WORKFLOW_TYPE, raw, id=f"raw-{uuid.uuid4().hex[:8]}", task_queue=task_queue, result_type=AgentResult
        )
    assert deleted == []
    assert result.stop_reason == "error"
    assert result.error is not None and "`require_approval` names tool(s) delete_files" in result.error
    assert [step.role for step in result.steps] == ["user"]  # the goal is kept; no model call, no tool


@pytest.mark.slow
async def test_a_misspelt_mcp_tool_in_require_approval_ends_the_run_once_its_server_is_listed(stalwart, worker_with):
    agent = AgentSpec(
        name="mcp-approver",
        mcp_servers=[stdio_demo()],
        require_approval=["ad"],
        scripted=[ScriptedReply(tool_calls=[ScriptedToolCall(name="add", arguments={"a": 1, "b": 2})])],
    )
    async with worker_with():
        result = await (await stalwart.start(agent, "add")).result()
    assert result.stop_reason == "error"
    assert result.error is not None and "`require_approval` names tool(s) ad " in result.error
    assert "add" in result.error.partition("its tools: ")[2]  # the tools the server offers are listed
    assert not [step for step in result.steps if step.role == "tool"]
