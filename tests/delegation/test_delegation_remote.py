"""Delegation to a remote agent over A2A, against the live A2A test server of tests/a2a."""

from __future__ import annotations

from delegation_team import call

from stalwart.contracts.agent import AgentSpec, ScriptedReply, SubAgent


def remote_lead(url: str) -> AgentSpec:
    return AgentSpec(
        name="lead",
        sub_agents=[SubAgent(name="remote", url=url)],
        scripted=[ScriptedReply(tool_calls=[call("remote", task="Find quantum info")]), ScriptedReply(text="Done.")],
    )


async def test_a_remote_sub_agent_answers_over_a2a_with_the_call_as_its_message_id(a2a_server, stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(remote_lead(a2a_server.url("echo")), "Explain")
        result = await handle.result()
    assert result.steps[2].result == "echo: Find quantum info"
    [message_id] = a2a_server.message_ids
    workflow_id, chain_id, step_and_call = message_id.split("/", 2)
    assert (workflow_id, step_and_call) == (handle.run_id, "1/call_1_1") and chain_id


async def test_a_remote_sub_agent_without_a_description_is_described_by_its_card(a2a_server, stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(remote_lead(a2a_server.url("echo")), "Explain")
        await handle.result()
        context = await handle.model_input(step=1)
    [tool] = context.tools
    assert tool.description == (
        "echo: Repeats what it is told.\n"
        "- Research: Finds and summarises sources on a topic. (e.g. Find papers on qubits)"
    )


async def test_a_remote_agent_that_cannot_be_reached_is_fed_back_as_a_delegation_error(
    a2a_server, stalwart, worker_with
):
    async with worker_with():
        handle = await stalwart.start(remote_lead(a2a_server.url("nobody")), "Explain")
        result = await handle.result()
        events = await handle.events()
    assert result.stop_reason == "done"
    assert [e.event_type for e in events] == [
        "user_message",
        "delegation_request",
        "delegation_error",
        "agent_response",
    ]
    assert events[2].content.startswith(
        f"Delegation failed: remote agent remote ({a2a_server.url('nobody')}): A2ARequestError: no A2A agent card"
    )


async def test_a_remote_agent_that_asks_back_gives_the_model_its_question(a2a_server, stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(remote_lead(a2a_server.url("asker")), "Explain")
    assert result.steps[2].result == (
        "asker needs more to go on and asks: Which year do you mean?\n"
        "Delegate again with the whole task and the answer to this question."
    )
