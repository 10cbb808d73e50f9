"""MCP servers and bindings in agent files: strict validation, and stdio servers that run beside their agent file."""

from __future__ import annotations

from pathlib import Path

import pytest

from stalwart.client.agent_files import AgentFileError, load_agent, parse_agent

from support.repo_paths import AGENTS_DIR


def test_stdio_server_runs_in_the_agent_files_directory():
    (server,) = load_agent(AGENTS_DIR / "notes.toml").mcp_servers
    assert server.cwd == str(AGENTS_DIR)
    assert (Path(server.cwd) / server.args[0]).is_file()


def test_server_without_command_or_url_says_how_to_declare_one():
    with pytest.raises(AgentFileError) as caught:
        parse_agent({"name": "a", "mcp_servers": [{"name": "notes"}]})
    assert 'set `transport = "stdio"` with a `command`, or `transport = "http"` with a `url`' in str(caught.value)


def test_misspelt_server_setting_is_named_with_a_suggestion():
    with pytest.raises(AgentFileError) as caught:
        parse_agent({"name": "a", "mcp_servers": [{"name": "n", "command": "python", "arg": ["x.py"]}]})
    assert "field `mcp_servers.0.stdio.arg` is not an agent setting; did you mean `args`?" in str(caught.value)


def test_two_servers_with_one_name_are_rejected():
    servers = [{"name": "n", "command": "python"}, {"name": "n", "url": "http://127.0.0.1:1/mcp"}]
    with pytest.raises(AgentFileError) as caught:
        parse_agent({"name": "a", "mcp_servers": servers})
    assert "MCP servers named twice: n" in str(caught.value)
