"""A typed-output turn that a budget stops before an answer validates: no output, as docs/typed-output.md says, but
its last answer is kept in `answer` and its error says what in that answer did not fit `[output]` (it said only
"Reached maximum reasoning steps" and had no error). A sub-agent in single mode makes one call, so an answer that
does not fit ends it in error naming why, not in `max_steps`."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from stalwart.contracts.agent import AgentSpec, Budgets, OutputSpec, ScriptedReply, ScriptedToolCall, SubAgent

from support.hour_long_tool import hour_long_job, tool_started, unlock_time_skipping


@pytest.fixture(scope="module")
def time_skipping_env(isolated_time_skipping_env):
    """A server of this module's own: the wall-clock test needs workflow time to pass (see tests/conftest.py)."""
    return isolated_time_skipping_env


class Count(BaseModel):
    x: int


def counter(*replies: ScriptedReply, retries: int = 2, tools: tuple[str, ...] = ("echo",), **budgets: object):
    return AgentSpec(
        name="counter",
        tools=list(tools),
        scripted=list(replies),
        output=OutputSpec.for_type(Count, retries=retries),
        budgets=Budgets(**budgets),
    )


def text(answer: str) -> ScriptedReply:
    return ScriptedReply(text=answer)


def call(name: str, **arguments: object) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=arguments)])


async def test_a_turn_out_of_steps_keeps_its_last_answer_and_says_what_did_not_validate(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(counter(text('{"y": 1}'), text('{"y": 2}'), max_steps=2), "count")
    assert (result.stop_reason, result.answer, result.output) == ("max_steps", '{"y": 2}', None)
    assert result.error == (
        "the turn stopped at its max_steps budget before an answer validated against the agent's [output] schema; "
        "the last answer, kept in `answer`, does not fit it:\n- `$`: missing required property x"
    )


async def test_a_finalized_answer_is_the_last_answer_and_its_problems_are_named(stalwart, worker_with):
    spec = counter(text("[]"), text('{"x": "three"}'), max_steps=1, finalize_on_budget=True)
    async with worker_with():
        result = await stalwart.run(spec, "count")
    assert (result.stop_reason, result.answer, result.output) == ("max_steps", '{"x": "three"}', None)
    assert '`$.x`: expected integer, got a string "three"' in (result.error or "")


async def test_a_finalized_answer_that_fits_is_kept_but_is_no_output(stalwart, worker_with):
    spec = counter(text("[]"), text('{"x": 3}'), max_steps=1, finalize_on_budget=True)
    async with worker_with():
        result = await stalwart.run(spec, "count")
    assert (result.stop_reason, result.answer, result.output) == ("max_steps", '{"x": 3}', None)
    assert "the last answer, kept in `answer`, fits it, but a turn a budget stopped gives no output" in (
        result.error or ""
    )


async def test_a_turn_out_of_steps_without_an_answer_says_so_as_before(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(counter(call("echo", text="a"), call("echo", text="b"), max_steps=1), "count")
    assert (result.stop_reason, result.answer, result.error) == (
        "max_steps",
        "Reached maximum reasoning steps (1)",
        None,
    )


async def test_a_turn_out_of_steps_after_continuing_as_new_keeps_the_answer_it_refused(stalwart, worker_with):
    echo = call("echo", text="x")
    spec = counter(text('{"y": 1}'), echo, echo, echo, echo, echo, echo, max_steps=7)
    spec = spec.model_copy(
        update={"session": spec.session.model_copy(update={"continue_as_new_events": 20}), "thrash_guard": False}
    )
    async with worker_with():
        handle = await stalwart.start(spec, "count")
        result = await handle.result()
        runs = len(await handle.histories())
    assert runs > 1
    assert (result.stop_reason, result.answer) == ("max_steps", '{"y": 1}')
    assert "missing required property x" in (result.error or "")


async def test_a_turn_cut_by_its_wall_clock_keeps_its_last_answer_and_says_what_did_not_validate(
    time_skipping_env, stalwart, worker_with
):
    tool_started.clear()
    async with worker_with(hour_long_job):
        handle = await stalwart.start(
            counter(text("[1]"), call("hour_long_job", topic="x"), tools=("hour_long_job",), max_seconds=60), "count"
        )
        await tool_started.wait()
        await unlock_time_skipping(time_skipping_env)
        result = await handle.result()
    assert (result.stop_reason, result.answer, result.output) == ("max_seconds", "[1]", None)
    assert "stopped at its max_seconds budget" in (result.error or "")
    assert "`$`: expected object, got an array [1]" in (result.error or "")


def parent_of_a_single_call(*answers: str) -> AgentSpec:
    counts = AgentSpec(
        name="counts",
        scripted=[text(answer) for answer in answers],
        output=OutputSpec.for_type(Count, retries=1),
    )
    return AgentSpec(
        name="support",
        sub_agents=[SubAgent(name="counts", mode="single", spec=counts)],
        scripted=[call("counts", task="count"), text("Done.")],
    )


async def test_a_single_call_sub_agent_whose_answer_does_not_fit_fails_the_delegation_naming_why(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(parent_of_a_single_call("nope", '{"x": 6}'), "help")
    [delegation] = [step for step in result.steps if step.role == "tool"]
    assert delegation.error is not None
    assert "sub-agent counts stopped with error: the answer did not validate" in delegation.error
    assert "after 1 try:\n- the answer is not JSON" in delegation.error
    assert "raise [output] retries" not in delegation.error  # one call: there is no retry to raise
    assert "max_steps" not in delegation.error


async def test_a_single_call_sub_agent_whose_answer_fits_gives_its_json(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(parent_of_a_single_call('{"x": 5}'), "help")
    [delegation] = [step for step in result.steps if step.role == "tool"]
    assert (delegation.result, delegation.error) == ('{"x": 5}', None)
