"""The scripted model: replies in order, from the spec or from DEBUG_MOCK_RESPONSES as the KAOS seed defines it."""

from __future__ import annotations

import pytest

from stalwart.activities.providers.base import ModelConfigError
from stalwart.activities.providers.scripted import ScriptedProvider, parse_mock_responses
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import Message
from stalwart.contracts.tools import ToolSpec


def context(agent: AgentSpec, step: int) -> ModelContext:
    echo = ToolSpec(name="echo")  # a model offered no tools calls none, as a real one
    return ModelContext(agent=agent, step=step, tools=[echo], messages=[Message(role="user", content="go")])


def test_a_json_array_is_one_reply_per_item():
    assert [r.text for r in parse_mock_responses('["{}", "Hello!"]')] == ["{}", "Hello!"]


def test_a_non_array_json_value_is_a_one_item_list():
    assert [r.text for r in parse_mock_responses('{"tool": "echo"}')] == ['{"tool": "echo"}']


def test_text_that_is_not_json_is_one_reply():
    assert [r.text for r in parse_mock_responses("plain words")] == ["plain words"]


async def test_reply_n_answers_model_call_n_and_tool_calls_get_stable_ids():
    agent = AgentSpec(
        name="a",
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "x"})]),
            ScriptedReply(text="two"),
        ],
    )
    provider = ScriptedProvider(environ={})
    first = await provider.complete(context(agent, 1))
    retried = await provider.complete(context(agent, 1))  # a retried attempt of the same call
    second = await provider.complete(context(agent, 2))
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("call_1_1", "echo", {"text": "x"})]
    assert [c.id for c in retried.tool_calls] == ["call_1_1"]
    assert second.text == "two"


async def test_debug_mock_responses_are_used_when_the_spec_scripts_nothing():
    provider = ScriptedProvider(environ={"DEBUG_MOCK_RESPONSES": '["first", "second"]'})
    assert (await provider.complete(context(AgentSpec(name="a"), 2))).text == "second"


async def test_a_scripted_model_offered_no_tools_calls_none():
    agent = AgentSpec(name="a", scripted=[ScriptedReply(text="hi", tool_calls=[ScriptedToolCall(name="echo")])])
    bare = ModelContext(agent=agent, step=1, tools=[], messages=[Message(role="user", content="go")])
    assert (await ScriptedProvider(environ={}).complete(bare)).tool_calls == []


async def test_running_out_of_replies_is_a_configuration_error_that_names_the_fix():
    with pytest.raises(ModelConfigError, match=r"no reply for model call 2: agent 'a' scripts 1 reply\. Add replies"):
        await ScriptedProvider(environ={}).complete(context(AgentSpec(name="a", scripted=[ScriptedReply(text="x")]), 2))
