"""Bindings (Prompty §9.5): a parameter bound to a run input is hidden from the model and filled from the input."""

from __future__ import annotations

import pytest
from activity_calls import call, describe
from mcp_test_servers import stdio_demo
from temporalio.exceptions import ApplicationError

from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools.registry import ToolRegistry, tool
from stalwart.contracts.agent import AgentSpec


@tool
def convert(amount: float, currency: str) -> str:
    """Convert an amount of euros into a currency.

    Args:
        amount: Euros.
        currency: ISO code of the target currency.
    """
    return f"{amount:g} EUR in {currency}"


@pytest.fixture
def activities() -> ToolActivities:
    return ToolActivities(ToolRegistry([convert]))


BOUND = AgentSpec(name="a", tools=["convert"], bindings={"convert": {"currency": "home_currency"}})


async def test_bound_parameter_is_hidden_from_the_model(activities):
    spec = (await describe(activities, BOUND))["convert"]
    assert "currency" not in spec.parameters["properties"]
    assert spec.parameters["required"] == ["amount"]
    assert spec.bindings == {"currency": "home_currency"}


async def test_bound_mcp_parameter_is_hidden_from_the_model(tool_activities):
    agent = AgentSpec(
        name="a", mcp_servers=[stdio_demo(tools=["weather"])], bindings={"weather": {"unit": "preferred_unit"}}
    )
    spec = (await describe(tool_activities, agent))["weather"]
    assert list(spec.parameters["properties"]) == ["city"]
    assert spec.parameters["required"] == ["city"]
    assert spec.bindings == {"unit": "preferred_unit"}


async def test_bound_parameter_overrides_what_the_model_sent(activities):
    spec = (await describe(activities, BOUND))["convert"]
    result = await call(activities, spec, {"amount": 10, "currency": "XXX"}, inputs={"home_currency": "NOK"})
    assert result.content == "10 EUR in NOK"


async def test_missing_run_input_is_reported_to_the_model(activities):
    spec = (await describe(activities, BOUND))["convert"]
    result = await call(activities, spec, {"amount": 10})
    assert result.is_error
    assert result.error == "tool convert takes run input(s) home_currency, which this run was not given"


async def test_binding_a_parameter_the_tool_lacks_fails_describe(activities):
    agent = AgentSpec(name="a", tools=["convert"], bindings={"convert": {"rate": "fx_rate"}})
    with pytest.raises(ApplicationError) as caught:
        await describe(activities, agent)
    assert caught.value.non_retryable
    assert (
        "binds parameter(s) rate that tool convert does not take (its parameters: amount, currency)"
        in caught.value.message
    )


async def test_binding_a_tool_the_agent_lacks_fails_describe(activities):
    agent = AgentSpec(name="a", tools=["convert"], bindings={"weather": {"unit": "preferred_unit"}})
    with pytest.raises(ApplicationError) as caught:
        await describe(activities, agent)
    assert "[bindings] names tool(s) weather that the agent does not have (its tools: convert)" in caught.value.message
