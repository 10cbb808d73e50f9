"""Seed 003's low temperature, on every provider's wire: the default an agent file leaves unset, and its own."""

from __future__ import annotations

from flavors import FLAVORS, Flavor, agent_for, run_agent

from stalwart.contracts.agent import DEFAULT_TEMPERATURE

from wire_server.script import Reply


async def test_the_temperature_defaults_low_and_the_agent_file_sets_it(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    """Seed 003: "Mitigation: aggressive history pruning (smaller history_limit), low temperature (0.0–0.2)";
    its `AgentConfig` has `temperature: float = 0.2`."""
    script = wire.script(Reply(text="One."), Reply(text="Two."))
    await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    await run_agent(time_skipping_env, task_queue + "-set", agent_for(flavor, script, tools=[], temperature=0.7))
    default = None if flavor.id == "anthropic" else DEFAULT_TEMPERATURE  # Anthropic deprecated the parameter
    assert [r.body.get("temperature") for r in script.requests] == [default, 0.7]
    assert DEFAULT_TEMPERATURE == 0.2


async def test_models_that_take_no_temperature_are_sent_none(time_skipping_env, task_queue, wire, monkeypatch):
    """OpenAI's reasoning models refuse a temperature: the low default is not sent to them."""
    [chat] = [f for f in FLAVORS if f.id == "openai-chat"]
    monkeypatch.setenv(chat.key_env, "sk-test-o-series-0123456789")
    script = wire.script(Reply(text="One."))
    reasoning = agent_for(chat, script, tools=[]).model_copy(update={"model": "openai:o4-mini"})
    await run_agent(time_skipping_env, task_queue, reasoning)
    assert "temperature" not in script.requests[0].body
