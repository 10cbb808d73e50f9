"""Seed 001, the KAOS fenced-block loop: `AgenticLoopConfig`'s `enable_tools` and `enable_delegation`.

Each test quotes the line of `../shared/reference/seeds/001_e71e76d067c4ed18.txt` it checks.
"""

from __future__ import annotations

from stalwart.activities.protocols import fenced, json_actions
from stalwart.activities.protocols.prompts import fenced_system_prompt
from stalwart.client.agent_files import load_agent
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, LoopSettings
from stalwart.workers.worker import build_worker

ECHO_BLOCK = """I'll use the echo tool.

```tool_call
{"tool": "echo", "arguments": {"text": "hello"}}
```"""
DELEGATE_BLOCK = """This is a research task, I'll delegate to the helper agent.

```delegate
{"agent": "helper", "task": "Find information about quantum computing"}
```"""


def fenced_agent(*replies: str, loop: LoopSettings) -> AgentSpec:
    helper = {"name": "helper", "description": "Helps.", "spec": {"scripted": [{"text": "Qubits."}]}}
    return AgentSpec.model_validate(
        {
            "name": "fenced",
            "action_format": "fenced",
            "tools": ["echo"],
            "sub_agents": [helper],
            "scripted": [{"text": r} for r in replies],
            "loop": loop,
        }
    )


async def test_with_enable_tools_off_tools_are_not_described_nor_parsed(time_skipping_env, task_queue):
    """Seed 001: "### enable_tools  When `True`: - Tool descriptions added to system prompt - Response parsed for
    `tool_call` blocks - Tools executed and results fed back"; off, none of that: a reply holding a `tool_call`
    block is the final response, as the seed's loop goes on to "5. No Action → Return Final Response"."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    spec = fenced_agent(ECHO_BLOCK, loop=LoopSettings(enable_tools=False))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(spec, "Echo hello")
        result = await run.result()
        sent = await run.model_input(1)
    assert (result.stop_reason, result.answer) == ("done", ECHO_BLOCK)
    assert not [s for s in result.steps if s.role == "tool"]
    assert [t.name for t in sent.tools] == ["helper"]  # delegation stays on
    prompt = fenced_system_prompt(spec.instructions, sent.tools)
    assert "## Available Tools" not in prompt and "```tool_call" not in prompt
    assert "## Available Agents for Delegation" in prompt and "```delegate" in prompt


async def test_with_enable_delegation_off_agents_are_not_described_nor_parsed(time_skipping_env, task_queue):
    """Seed 001: "### enable_delegation  When `True`: - Sub-agent descriptions added to system prompt - Response
    parsed for `delegate` blocks - Sub-agents invoked and responses fed back"; off, a `delegate` block is the answer,
    while tool calls still run."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    spec = fenced_agent(ECHO_BLOCK, DELEGATE_BLOCK, loop=LoopSettings(enable_delegation=False))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(spec, "Echo, then delegate")
        result = await run.result()
        sent = await run.model_input(1)
    assert (result.stop_reason, result.answer) == ("done", DELEGATE_BLOCK)
    assert [(s.tool_name, s.result) for s in result.steps if s.role == "tool"] == [("echo", "hello")]
    assert [t.name for t in sent.tools] == ["echo"]
    prompt = fenced_system_prompt(spec.instructions, sent.tools)
    assert "## Available Tools" in prompt and "## Available Agents for Delegation" not in prompt


async def test_both_on_by_default_a_block_of_each_kind_runs(time_skipping_env, task_queue):
    """Seed 001: "enable_tools: bool = True   # Parse and execute tool calls",
    "enable_delegation: bool = True  # Parse and execute delegations"."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    spec = fenced_agent(ECHO_BLOCK, DELEGATE_BLOCK, "Qubits, says the helper.", loop=LoopSettings())
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        result = await stalwart.run(spec, "Echo, then delegate")
    assert result.answer == "Qubits, says the helper."
    assert [(s.tool_name, s.tool_kind) for s in result.steps if s.role == "tool"] == [
        ("echo", "function"),
        ("helper", "agent"),
    ]


def test_the_parsers_skip_a_disabled_kind():
    """Seed 001: a disabled kind's "Response parsed for ... blocks" is off, in both text protocols."""
    tools_off, delegation_off = LoopSettings(enable_tools=False), LoopSettings(enable_delegation=False)
    assert fenced.read(ECHO_BLOCK, 1, {"helper"}, tools_off).tool_calls == []
    assert [c.name for c in fenced.read(DELEGATE_BLOCK, 1, {"helper"}, tools_off).tool_calls] == ["helper"]
    assert fenced.read(DELEGATE_BLOCK, 1, {"helper"}, delegation_off).tool_calls == []
    assert json_actions.read('{"tool": "echo", "arguments": {}}', 1, (), tools_off).wants_final_answer
    assert json_actions.read('{"agent": "helper", "task": "x"}', 1, {"helper"}, delegation_off).wants_final_answer


def test_the_agent_file_sets_both_flags(tmp_path):
    """Seed 001's `AgenticLoopConfig` (`max_steps`, `enable_tools`, `enable_delegation`) as agent-file fields:
    `[budgets] max_steps`, `[loop] enable_tools`, `[loop] enable_delegation`."""
    path = tmp_path / "fenced.toml"
    path.write_text(
        'name = "fenced"\n[budgets]\nmax_steps = 5\n[loop]\nenable_tools = false\nenable_delegation = false\n'
    )
    spec = load_agent(path)
    assert (spec.budgets.max_steps, spec.loop.enable_tools, spec.loop.enable_delegation) == (5, False, False)
