"""Delegation through the KAOS text protocols: `{"agent": ..., "task": ...}` (seed 000)
and ```delegate blocks (seed 001)."""

from __future__ import annotations

from delegation_team import researcher

from stalwart.activities.protocols import fenced, json_actions
from stalwart.activities.protocols.prompts import fenced_system_prompt, json_system_prompt
from stalwart.activities.protocols.text_protocol import results_text
from stalwart.contracts.agent import AgentSpec, ScriptedReply, SubAgent
from stalwart.contracts.messages import ToolResult
from stalwart.contracts.tools import ToolSpec
from stalwart.workflows.delegation import tool_specs

SEED_DELEGATION_MOCK = [
    '{"agent": "researcher", "task": "Find quantum info"}',
    "{}",
    "Based on the research, quantum computing uses qubits.",
]
ECHO = ToolSpec(
    name="echo",
    description="Echo the text back.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
)
RESEARCHER = ToolSpec(name="researcher", description="Finds facts.", kind="agent")


def kaos_lead(action_format: str, *replies: str) -> AgentSpec:
    return AgentSpec(
        name="lead",
        action_format=action_format,  # type: ignore[arg-type]
        sub_agents=[SubAgent(name="researcher", spec=researcher())],
        scripted=[ScriptedReply(text=reply) for reply in replies],
    )


async def test_the_seed_delegation_mock_sequence_runs_through_the_json_protocol(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(kaos_lead("json", *SEED_DELEGATION_MOCK), "Tell me about quantum computing")
        result = await handle.result()
        events = await handle.events()
    assert result.answer == "Based on the research, quantum computing uses qubits."
    assert [e.event_type for e in events] == [
        "user_message",
        "delegation_request",
        "delegation_response",
        "agent_response",
    ]
    assert events[1].content == {"agent": "researcher", "task": "Find quantum info"}


async def test_a_fenced_delegate_block_delegates_to_the_sub_agent(stalwart, worker_with):
    block = 'This is a research task.\n\n```delegate\n{"agent": "researcher", "task": "Find quantum info"}\n```'
    async with worker_with():
        result = await stalwart.run(
            kaos_lead("fenced", block, "Qubits, says the researcher."), "Tell me about quantum computing"
        )
    delegation = result.steps[2]
    assert (delegation.tool_name, delegation.arguments, delegation.result) == (
        "researcher",
        {"task": "Find quantum info"},
        "Quantum computers use qubits.",
    )


def test_a_json_delegation_to_a_known_agent_is_a_call_of_its_tool():
    [call] = json_actions.read(
        '{"agent": "researcher", "task": "Find quantum info"}', step=2, agents={"researcher"}
    ).tool_calls
    assert (call.id, call.name, call.arguments) == ("call_2_1", "researcher", {"task": "Find quantum info"})


def test_a_json_delegation_without_agents_is_answered_with_feedback():
    reading = json_actions.read('{"agent": "researcher", "task": "Find quantum info"}', step=1)
    assert reading.tool_calls == []
    assert reading.feedback.startswith("This agent cannot delegate to other agents.")


def test_a_delegation_to_an_unknown_agent_names_the_agents_there_are():
    reading = json_actions.read('{"agent": "writer", "task": "Write"}', step=1, agents={"researcher"})
    assert reading.feedback.startswith('There is no agent named "writer"; delegate to one of: researcher.')


def test_a_fenced_tool_call_block_is_read_before_a_delegate_block():
    reply = (
        '```tool_call\n{"tool": "echo", "arguments": {"text": "hi"}}\n```\n'
        '```delegate\n{"agent": "researcher", "task": "x"}\n```'
    )
    assert [c.name for c in fenced.read(reply, step=1, agents={"researcher"}).tool_calls] == ["echo"]


def test_the_json_prompt_lists_agents_under_their_own_section_with_the_seed_instructions():
    prompt = json_system_prompt("You lead.", [ECHO, RESEARCHER])
    tools_at = prompt.index("## Available Tools")
    agents_at = prompt.index("## Available Agents for Delegation\n- **researcher**: Finds facts.")
    delegate_at = prompt.index(
        "To delegate a task to another agent, respond with ONLY this JSON (no other text):\n"
        '{"agent": "agent_name", "task": "task description"}'
    )
    no_action_at = prompt.index(
        "When you have all the information needed to provide a final answer, respond with ONLY:\n{}"
    )
    assert tools_at < agents_at < delegate_at < no_action_at
    assert "- **researcher**" not in prompt[tools_at:agents_at]


def test_the_fenced_prompt_shows_the_seed_delegate_block():
    prompt = fenced_system_prompt("You lead.", [RESEARCHER])
    assert "## Available Tools" not in prompt
    assert (
        "To delegate a task to another agent, respond with:\n"
        '```delegate\n{"agent": "agent_name", "task": "task description"}\n```'
    ) in prompt


def test_agent_results_are_fed_back_as_agent_responses_and_failures_as_delegation_failed():
    answered = ToolResult(call_id="c1", name="researcher", content="Qubits.")
    failed = ToolResult(
        call_id="c2",
        name="researcher",
        error="Delegation failed: sub-agent researcher stopped with max_steps",
    )
    assert results_text([answered], frozenset({"researcher"})) == "Agent response: Qubits."
    assert (
        results_text([failed], frozenset({"researcher"}))
        == "Delegation failed: sub-agent researcher stopped with max_steps"
    )


def test_a_sub_agent_is_offered_as_a_tool_taking_a_task_described_by_its_spec():
    [spec] = tool_specs(AgentSpec(name="lead", sub_agents=[SubAgent(name="researcher", spec=researcher())]))
    assert (spec.kind, spec.description, spec.parameters["required"]) == ("agent", "Finds facts.", ["task"])
