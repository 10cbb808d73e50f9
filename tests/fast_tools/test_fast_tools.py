"""Issue 45, item 3: a tool marked fast (and the built-in calculator) runs as a local activity.

Its call is one `MarkerRecorded` event in history instead of an activity's scheduled, started and completed
events and a round trip through the server; the model reads its result, or its error, as it reads any tool's.
"""

from __future__ import annotations

import asyncio
import json

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from stalwart.activities.tool_activities import HEARTBEAT_EVERY_SECONDS
from stalwart.activities.tools import tool
from stalwart.activities.tools.registry import RetryableToolError
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.names import RUN_TOOL_ACTIVITY
from stalwart.contracts.run import AgentResult
from stalwart.workflows import AgentWorkflow

from support.approvals import until_pending


@tool(fast=True)
def halve(number: float) -> float:
    """Half of a number.

    Args:
        number: What to halve.
    """
    if number < 0:
        raise ValueError("only a number of 0 or more can be halved here")
    return number / 2


def agent(*calls: ScriptedToolCall, tools: list[str]) -> AgentSpec:
    return AgentSpec(
        name="fast-tools",
        tools=tools,
        scripted=[ScriptedReply(tool_calls=list(calls)), ScriptedReply(text="done")],
    )


def scheduled_tools(history) -> list[str]:
    """The activity types a run's history scheduled as full activities."""
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def markers(history) -> list[str]:
    return [
        e.marker_recorded_event_attributes.marker_name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]


def local_activities(history) -> list[str]:
    """The activity types a run's history recorded as local activities: each one marker, its type in the JSON
    of the marker's `data`."""
    return [
        json.loads(e.marker_recorded_event_attributes.details["data"].payloads[0].data)["activity_type"]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]


async def finished(stalwart: StalwartClient, spec: AgentSpec, goal: str) -> tuple[AgentResult, WorkflowHistory]:
    """The result and the history of a run of `spec`, on the worker the test started."""
    handle = await stalwart.start(spec, goal)
    return await handle.result(), await handle.history()


async def test_the_calculator_runs_as_a_local_activity(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="calculator", arguments={"expression": "6*7"}), tools=["calculator"])
    async with worker_with():
        result, history = await finished(stalwart, spec, "compute")
    assert result.steps[2].result == "42"
    assert RUN_TOOL_ACTIVITY not in scheduled_tools(history)
    assert "core_local_activity" in markers(history)


async def test_a_tool_marked_fast_runs_as_a_local_activity(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="halve", arguments={"number": 9}), tools=["halve"])
    async with worker_with(halve):
        _, history = await finished(stalwart, spec, "halve 9")
    assert RUN_TOOL_ACTIVITY not in scheduled_tools(history)
    assert "core_local_activity" in markers(history)


async def test_a_tool_not_marked_fast_still_runs_as_an_activity(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="echo", arguments={"text": "hi"}), tools=["echo"])
    async with worker_with():
        _, history = await finished(stalwart, spec, "echo")
    assert RUN_TOOL_ACTIVITY in scheduled_tools(history)
    assert "core_local_activity" not in markers(history)


async def test_a_fast_tools_result_reaches_the_model(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="halve", arguments={"number": 9}), tools=["halve"])
    async with worker_with(halve):
        handle = await stalwart.start(spec, "halve 9")
        await handle.result()
        seen = await handle.model_input(2)
    results = [r for m in seen.messages if m.role == "tool" for r in m.tool_results]
    assert [(r.name, r.for_model()) for r in results] == [("halve", "4.5")]


async def test_a_failing_fast_tools_error_reaches_the_model(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="halve", arguments={"number": -1}), tools=["halve"])
    async with worker_with(halve):
        handle = await stalwart.start(spec, "halve -1")
        await handle.result()
        seen = await handle.model_input(2)
    (result,) = [r for m in seen.messages if m.role == "tool" for r in m.tool_results]
    assert result.is_error
    assert json.loads(result.for_model())["error"] == "ValueError: only a number of 0 or more can be halved here"


async def test_a_history_holding_a_fast_tool_as_a_local_activity_marker_replays(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="calculator", arguments={"expression": "2**10"}), tools=["calculator"])
    async with worker_with():
        _, history = await finished(stalwart, spec, "compute")
    assert local_activities(history) == [RUN_TOOL_ACTIVITY]  # what is replayed: the tool call as a marker
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=DATA_CONVERTER)
    replay = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


def test_a_fast_tools_spec_says_so_and_an_ordinary_ones_leaves_it_out_of_its_json():
    assert halve.spec().fast
    assert "fast" not in json.loads(tool(lambda: None, name="plain").spec().model_dump_json())


@tool(fast=True)
async def pause_then_answer(seconds: float) -> str:
    """Wait, then answer.

    Args:
        seconds: How long to wait.
    """
    await asyncio.sleep(seconds)
    return f"waited {seconds:g} s"


async def test_a_fast_tool_that_outlasts_a_heartbeat_interval_still_answers(stalwart, worker_with):
    wait = HEARTBEAT_EVERY_SECONDS + 0.5  # the tool activity would heartbeat meanwhile; a local one has none
    spec = agent(ScriptedToolCall(name="pause_then_answer", arguments={"seconds": wait}), tools=["pause_then_answer"])
    async with worker_with(pause_then_answer):
        result = await stalwart.run(spec, "wait")
    assert result.steps[2].result == f"waited {wait:g} s"


@tool(fast=True, requires_approval=True)
def stamp(word: str) -> str:
    """Stamp a word; a person approves every call first.

    Args:
        word: The word to stamp.
    """
    return f"[{word}]"


async def test_a_fast_tool_that_needs_approval_waits_for_it_then_runs_as_a_local_activity(stalwart, worker_with):
    spec = agent(ScriptedToolCall(name="stamp", arguments={"word": "ok"}, id="s1"), tools=["stamp"])
    async with worker_with(stamp):
        handle = await stalwart.start(spec, "stamp it")
        pending = await until_pending(handle)
        await handle.approve("s1")
        result = await handle.result()
        history = await stalwart.temporal.get_workflow_handle(handle.run_id).fetch_history()
    assert [p.tool_name for p in pending] == ["stamp"]
    assert result.steps[2].result == "[ok]"
    assert RUN_TOOL_ACTIVITY not in scheduled_tools(history)


@tool(fast=True)
def always_busy(target: str) -> str:
    """Acts on `target`, which stays busy.

    Args:
        target: What to act on.
    """
    raise RetryableToolError(f"{target} is busy", retry_after=0.05)


async def test_a_fast_tool_that_fails_every_attempt_gives_the_model_its_error_as_a_full_activity_does(
    stalwart, worker_with
):
    """Its attempts (`TOOL_RETRY`'s 5, each after the tool's own `retry_after` instead of the policy's 15 s of
    backoff) spent, the SDK raises a local activity's last failure unwrapped, not in an `ActivityError`: it failed
    the run."""
    spec = agent(ScriptedToolCall(name="always_busy", arguments={"target": "db"}), tools=["always_busy"])
    async with worker_with(always_busy):
        handle = await stalwart.start(spec, "act on the db")
        result = await handle.result()
        seen = await handle.model_input(2)
    assert result.stop_reason == "done", result.error
    (answered,) = [r for m in seen.messages if m.role == "tool" for r in m.tool_results]
    assert answered.is_error
    assert "db is busy" in json.loads(answered.for_model())["error"]
