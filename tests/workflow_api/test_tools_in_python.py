"""An agent written in Python with its tools as the `@tool` functions and its sub-agents as specs is the agent its
TOML file describes, and the worker finds a `--tools` module in the folder it starts in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from tools_for_agents import lookup_order

from stalwart import AgentSpec, load_agent, tool
from stalwart.contracts.agent import McpStdioServer
from stalwart.workers.plugin import StalwartPlugin

AGENT_FILE = """
name = "support"
instructions = "Answer questions about orders."
tools = ["lookup_order", "calculator"]

[[mcp_servers]]
name = "notes"
command = "python"
args = ["notes_server.py"]
cwd = "/srv/notes"

[[sub_agents]]
name = "reviewer"
[sub_agents.spec]
instructions = "Check the answer."
tools = ["lookup_order"]
"""


def support_in_python() -> AgentSpec:
    reviewer = AgentSpec(name="reviewer", instructions="Check the answer.", tools=[lookup_order])
    return AgentSpec(
        name="support",
        instructions="Answer questions about orders.",
        tools=[lookup_order, "calculator"],
        mcp_servers=[McpStdioServer(name="notes", command="python", args=["notes_server.py"], cwd="/srv/notes")],
        sub_agents=[reviewer],
    )


def test_an_agent_in_python_with_tools_as_functions_is_the_agent_of_its_file(tmp_path):
    path = tmp_path / "support.toml"
    path.write_text(AGENT_FILE)
    assert load_agent(path) == support_in_python()
    assert load_agent(path).model_dump() == support_in_python().model_dump()


def test_the_spec_keeps_the_functions_of_the_agent_and_its_sub_agents():
    assert support_in_python().tool_functions() == [lookup_order, lookup_order]


def test_the_plugin_given_the_agent_registers_its_tool_functions():
    plugin = StalwartPlugin(agents=[support_in_python()])
    assert plugin.registry.get("lookup_order") is lookup_order


def test_a_function_not_decorated_as_a_tool_is_refused_with_what_to_do():
    def shout(text: str) -> str:
        return text.upper()

    with pytest.raises(ValueError, match="'shout' is a function not decorated with @tool"):
        AgentSpec(name="loud", tools=[shout])


def test_two_different_tools_of_one_name_given_by_agents_are_refused():
    @tool(name="lookup_order")
    def another_lookup(order_id: str) -> str:
        return order_id

    with pytest.raises(ValueError, match="two tools are named 'lookup_order'"):
        StalwartPlugin(agents=[AgentSpec(name="a", tools=[lookup_order]), AgentSpec(name="b", tools=[another_lookup])])


def test_a_tools_module_in_the_current_folder_is_found_as_the_console_script_runs(tmp_path):
    """The `stalwart` console script puts its own folder on `sys.path`, not the one it starts in: a script run by
    path from elsewhere does the same."""
    (tmp_path / "planner_tools.py").write_text(
        textwrap.dedent(
            '''
            from stalwart import tool

            @tool
            def days_between(start: str, end: str) -> int:
                """Days between two dates."""
                return 0
            '''
        )
    )
    script = tmp_path / "bin" / "script.py"
    script.parent.mkdir()
    script.write_text(
        "from stalwart.workers.worker import default_registry\nprint(default_registry(['planner_tools']).names())\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert "days_between" in done.stdout
