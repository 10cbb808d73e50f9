"""Typed output on the wire: each provider's request asks for the agent's `[output]` schema its own way, through the
real SDKs against the wire server, and the answer it gives is the run's output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flavors import FLAVORS, Flavor, agent_for, run_agent

from stalwart.contracts.agent import OutputSpec

from wire_server.script import Call, Reply

REFUND = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
VALID = {"order_id": "7", "amount": 12.5}


def asked_schema(flavor: Flavor, body: dict[str, Any]) -> dict[str, Any]:
    """The schema a request body asks the answer to fit, in the provider's own parameter."""
    if flavor.id == "anthropic":
        assert body["output_config"]["format"]["type"] == "json_schema"
        return body["output_config"]["format"]["schema"]
    if flavor.id == "openai-responses":
        form = body["text"]["format"]
        assert (form["type"], form["name"]) == ("json_schema", "final_result")
        return form["schema"]
    form = body["response_format"]
    assert (form["type"], form["json_schema"]["name"]) == ("json_schema", "final_result")
    return form["json_schema"]["schema"]


async def test_each_provider_asks_for_the_output_schema(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(text=json.dumps(VALID)))
    agent = agent_for(flavor, script, output=OutputSpec(schema=REFUND))
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", VALID)
    schema = asked_schema(flavor, script.requests[0].body)
    assert schema["required"] == ["order_id", "amount"]
    assert set(schema["properties"]) == {"order_id", "amount"}


@pytest.mark.parametrize("flavor", [f for f in FLAVORS if f.id in ("openai-chat", "openai-responses")], indirect=True)
async def test_openai_is_strict_only_where_the_schema_allows(time_skipping_env, task_queue, wire, flavor: Flavor):
    open_schema = {**REFUND, "additionalProperties": True}
    script = wire.script(Reply(text=json.dumps(VALID)), Reply(text=json.dumps(VALID)))
    await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, output=OutputSpec(schema=REFUND)))
    await run_agent(
        time_skipping_env, f"{task_queue}-2", agent_for(flavor, script, output=OutputSpec(schema=open_schema))
    )
    stricts = [
        (body.get("response_format") or {}).get("json_schema", {}).get("strict")
        if flavor.id == "openai-chat"
        else body["text"]["format"]["strict"]
        for body in (request.body for request in script.requests)
    ]
    assert stricts == [True, False]


async def test_a_schema_that_is_not_an_object_is_asked_for_wrapped_and_answered_unwrapped(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(text='{"result": [1, 2]}'))
    agent = agent_for(flavor, script, tools=[], output=OutputSpec.for_type(list[int]))
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", [1, 2])
    schema = asked_schema(flavor, script.requests[0].body)
    assert schema["required"] == ["result"]
    assert schema["properties"]["result"]["type"] == "array"


async def test_an_invalid_answer_goes_back_to_the_model_with_the_errors(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(text='{"order_id": "7", "amount": -3}'), Reply(text=json.dumps(VALID)))
    agent = agent_for(flavor, script, output=OutputSpec(schema=REFUND))
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", VALID)
    told = [text for role, text in flavor.texts_of(script.requests[1].body) if role == "user"]
    assert any("`$.amount`: -3 is less than the minimum 0" in text for text in told)


ANY_VALUE = {"description": "any JSON value"}
"""A schema Anthropic's structured output cannot take (it has no type): its final-answer tool is used instead."""


@pytest.mark.parametrize("flavor", [f for f in FLAVORS if f.id == "anthropic"], indirect=True)
async def test_anthropic_is_made_to_call_the_final_answer_tool_when_it_is_the_only_tool(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(calls=(Call("final_result", {"result": {"any": ["thing"]}}),)))
    agent = agent_for(flavor, script, tools=[], output=OutputSpec(schema=ANY_VALUE))
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", {"any": ["thing"]})
    body = script.requests[0].body
    assert "output_config" not in body
    assert [tool["name"] for tool in body["tools"]] == ["final_result"]
    assert body["tool_choice"] == {"type": "tool", "name": "final_result"}


@pytest.mark.parametrize("flavor", [f for f in FLAVORS if f.id == "anthropic"], indirect=True)
async def test_anthropic_is_offered_the_final_answer_tool_beside_its_tools(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(
        Reply(calls=(Call("calculator", {"expression": "6*7"}),)),
        Reply(calls=(Call("final_result", {"result": 42}),)),
    )
    agent = agent_for(flavor, script, output=OutputSpec(schema=ANY_VALUE))
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", 42)
    body = script.requests[0].body
    assert [tool["name"] for tool in body["tools"]] == ["calculator", "final_result"]
    assert body["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize("flavor", [f for f in FLAVORS if f.id == "openai-chat"], indirect=True)
async def test_a_text_protocol_is_told_the_schema_and_asks_for_it_only_for_the_answer(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(text="{}"), Reply(text=json.dumps(VALID)))
    agent = agent_for(flavor, script, action_format="json", output=OutputSpec(schema=REFUND))
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", VALID)
    acting, answering = (request.body for request in script.requests)
    assert "response_format" not in acting  # an action is no answer
    assert answering["response_format"]["json_schema"]["schema"] == REFUND
    assert "## Final answer" in acting["messages"][0]["content"]


async def test_structured_output_prompt_keeps_the_schema_to_the_system_prompt(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(Reply(text=json.dumps(VALID)))
    agent = agent_for(flavor, script, output=OutputSpec(schema=REFUND), extra={"structured_output": "prompt"})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, result.output) == ("done", VALID)
    body = script.requests[0].body
    assert not {"response_format", "text", "output_config"} & set(body)
    [(role, system)] = flavor.texts_of(body)[:1]
    assert role == "system" and "## Final answer" in system and '"order_id"' in system
