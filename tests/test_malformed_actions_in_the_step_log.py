"""A text protocol's malformed action is sent back to the model, and its model step says so: the step log of a run
whose model kept answering with one read as model steps alike until `max_steps`, saying nothing of why."""

from __future__ import annotations

import io

from stalwart.client import render
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply
from stalwart.contracts.run import AgentResult, RunState

NOT_A_NAME = '{"tool": 42, "arguments": {"text": "hi"}}'
BROKEN_BLOCK = '```tool_call\n{"tool": "echo", "arguments": {"text": }\n```'


def agent(reply: str, action_format: str) -> AgentSpec:
    return AgentSpec(
        name="kaos",
        tools=["echo"],
        action_format=action_format,  # type: ignore[arg-type]
        scripted=[ScriptedReply(text=reply)] * 2,
        budgets=Budgets(max_steps=2),
    )


async def ran(stalwart, worker_with, spec: AgentSpec) -> tuple[AgentResult, str]:
    """The run's result, and its step log as `stalwart show` prints it."""
    async with worker_with():
        handle = await stalwart.start(spec, "Echo hi")
        result = await handle.result()
        state: RunState = await handle.state()
    shown = io.StringIO()
    render.print_state(handle.run_id, state, None, shown)
    return result, shown.getvalue()


def said_by_every_model_step(result: AgentResult, shown: str, told: str) -> list[str]:
    """The errors of the run's two model steps, each checked to begin with `told`, in the result and as `show`
    prints it."""
    assert result.stop_reason == "max_steps"
    errors = [step.error or "" for step in result.steps if step.role == "assistant"]
    assert len(errors) == 2 and all(error.startswith(told) for error in errors)
    assert shown.count(f"model   ERROR {told}") == 2
    return errors


async def test_a_json_action_naming_no_tool_is_said_by_its_model_step(stalwart, worker_with):
    result, shown = await ran(stalwart, worker_with, agent(NOT_A_NAME, "json"))
    told = 'malformed action, sent back to the model: The "tool" field must be the name of a tool, got 42.'
    errors = said_by_every_model_step(result, shown, told)
    assert '{"tool": "tool_name"' in errors[0]  # the format the model was reminded of


async def test_a_fenced_block_that_is_not_json_is_said_by_its_model_step(stalwart, worker_with):
    result, shown = await ran(stalwart, worker_with, agent(BROKEN_BLOCK, "fenced"))
    told = "malformed action, sent back to the model: Your tool_call block is not valid JSON (Expecting value)."
    said_by_every_model_step(result, shown, told)


async def test_a_malformed_action_is_an_error_event(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(agent(NOT_A_NAME, "json"), "Echo hi")
        await handle.result()
        events = await handle.events()
    errors = [event.content for event in events if event.event_type == "error"]
    assert len(errors) == 2 and all("sent back to the model" in error for error in errors)
