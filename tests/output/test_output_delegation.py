"""A sub-agent may declare typed output: its parent's model reads the validated JSON as the delegation's result."""

from __future__ import annotations

import json

from stalwart.contracts.agent import AgentSpec, OutputSpec, ScriptedReply, ScriptedToolCall, SubAgent

SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
}


def parent(sub_replies: list[str]) -> AgentSpec:
    refunds = AgentSpec(
        name="refunds",
        scripted=[ScriptedReply(text=text) for text in sub_replies],
        output=OutputSpec(schema=SCHEMA, retries=1),
    )
    return AgentSpec(
        name="support",
        sub_agents=[SubAgent(name="refunds", spec=refunds)],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="refunds", arguments={"task": "refund order 7"})]),
            ScriptedReply(text="Refund proposed."),
        ],
    )


async def test_the_parent_reads_a_sub_agents_validated_json_as_the_result(stalwart, worker_with):
    fenced = '```json\n{"order_id": "7",\n "amount": 12.5}\n```'
    async with worker_with():
        result = await stalwart.run(parent(['{"order_id": "7"}', fenced]), "help the customer")
    assert result.stop_reason == "done"
    [delegation] = [step for step in result.steps if step.role == "tool"]
    assert delegation.tool_name == "refunds"
    assert json.loads(delegation.result or "") == {"order_id": "7", "amount": 12.5}
    assert delegation.result == '{"order_id": "7", "amount": 12.5}'


async def test_a_sub_agent_whose_answer_never_validates_fails_the_delegation_saying_why(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(parent(["nope", "still nope"]), "help the customer")
    [delegation] = [step for step in result.steps if step.role == "tool"]
    assert delegation.error is not None
    assert "sub-agent refunds stopped with error" in delegation.error
    assert "did not validate against the agent's [output] schema" in delegation.error
