"""A tool's failure never fails the run and never runs the tool twice by accident: the model reads the error.

Whatever a tool raises, `SystemExit` (argparse on flags it cannot parse), `KeyboardInterrupt`, a `CancelledError`
nothing asked for, or an exception whose message cannot be made, the call ends once, as an error the model reads,
and the worker lives on: as an ordinary activity and as a fast tool (a local activity), from a plain function and
from an async one. A real cancellation of the call still cancels it. A call past its `timeout_seconds` says so.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections import Counter

import pytest
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutError, TimeoutType
from temporalio.testing import ActivityEnvironment

from stalwart.activities.tool_activities import STOPPING_HINT, ToolActivities
from stalwart.activities.tools import tool
from stalwart.activities.tools.registry import ToolRegistry
from stalwart.contracts.activities import ToolRequest
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import TOOL_ERROR_HINT, ToolCall
from stalwart.workflows.failures import TOOL_TIMEOUT_HINT, final_message, tool_failure

ran: Counter[str] = Counter()
"""How many times each tool below ran."""


@tool(side_effecting=True)
def report(flags: str) -> str:
    """Make a report from command-line flags.

    Args:
        flags: Flags such as "--days 3".
    """
    ran["report"] += 1
    parser = argparse.ArgumentParser(prog="report")
    parser.add_argument("--days", type=int)
    return str(vars(parser.parse_args(flags.split())))  # exits 2 on flags it cannot parse


@tool(side_effecting=True)
async def interrupted(flags: str) -> str:
    """An async tool that raises KeyboardInterrupt.

    Args:
        flags: Ignored.
    """
    ran["interrupted"] += 1
    raise KeyboardInterrupt


@tool(fast=True)
def fast_report(flags: str) -> str:
    """A fast tool that exits on flags it cannot parse.

    Args:
        flags: Flags such as "--days 3".
    """
    ran["fast_report"] += 1
    raise SystemExit(2)


@tool(fast=True)
async def fast_interrupted(flags: str) -> str:
    """A fast async tool that raises KeyboardInterrupt.

    Args:
        flags: Ignored.
    """
    ran["fast_interrupted"] += 1
    raise KeyboardInterrupt


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text form")


@tool(side_effecting=True)
def unprintable(flags: str) -> str:
    """A tool whose exception's message cannot be made.

    Args:
        flags: Ignored.
    """
    ran["unprintable"] += 1
    raise Unprintable()


@tool(side_effecting=True)
async def stray_cancel(flags: str) -> str:
    """An async tool that raises CancelledError though its call is not cancelled.

    Args:
        flags: Ignored.
    """
    ran["stray_cancel"] += 1
    raise asyncio.CancelledError()


RELEASE = asyncio.Event()
"""Lets `slow` return: set once its call has timed out, so no attempt outlives its test."""


@tool(side_effecting=True, timeout_seconds=1)
async def slow(flags: str) -> str:
    """A tool that outlasts its timeout.

    Args:
        flags: Ignored.
    """
    ran["slow"] += 1
    await RELEASE.wait()
    return "done late"


def _agent(name: str) -> AgentSpec:
    return AgentSpec(
        name="tester",
        tools=[name],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments={"flags": "--days three"})]),
            ScriptedReply(text="I could not make it."),
        ],
    )


async def _told(stalwart, worker_with, name: str, *tools: object) -> dict[str, str]:
    """What the model read of a call of tool `name`, after a run that ended `done` (so its worker lived on)."""
    ran.clear()
    async with worker_with(*tools):
        result = await stalwart.run(_agent(name), "make the report")
    assert result.stop_reason == "done", result.error
    assert result.answer == "I could not make it."
    [step] = [s for s in result.steps if s.role == "tool"]
    return json.loads(step.error or "{}")


@pytest.mark.parametrize(
    ("name", "raised"),
    [
        ("report", "SystemExit(2)"),
        ("interrupted", "KeyboardInterrupt"),
        ("fast_report", "SystemExit(2)"),
        ("fast_interrupted", "KeyboardInterrupt"),
    ],
)
async def test_a_tool_that_exits_or_interrupts_gives_the_model_an_error_once_and_the_worker_lives(
    stalwart, worker_with, name, raised
):
    told = await _told(stalwart, worker_with, name, report, interrupted, fast_report, fast_interrupted)
    assert ran == {name: 1}, "the tool ran once"
    assert told["error"].startswith(f"{raised}: tool {name} "), told
    assert "a tool must raise an exception" in told["error"]
    assert told["hint"] == STOPPING_HINT


async def test_a_tool_whose_exception_cannot_be_printed_runs_once_and_the_model_reads_its_type(stalwart, worker_with):
    told = await _told(stalwart, worker_with, "unprintable", unprintable)
    assert ran == {"unprintable": 1}
    assert told == {
        "error": "Unprintable: <its message could not be read: str() raised RuntimeError>",
        "hint": TOOL_ERROR_HINT,
    }


async def test_an_async_tool_raising_cancelled_error_uncancelled_runs_once_and_the_model_reads_it(
    stalwart, worker_with
):
    told = await _told(stalwart, worker_with, "stray_cancel", stray_cancel)
    assert ran == {"stray_cancel": 1}
    assert told["error"].startswith("CancelledError: tool stray_cancel raised CancelledError though nothing cancelled")


async def test_a_tool_past_its_timeout_tells_the_model_the_timeout_and_what_to_do(stalwart, worker_with):
    RELEASE.clear()
    try:
        told = await _told(stalwart, worker_with, "slow", slow)
    finally:
        RELEASE.set()
    assert ran == {"slow": 1}, "its later attempts joined the call still running"
    assert told["error"].startswith("TimeoutError: the tool did not finish within its timeout_seconds (1 s). "), told
    assert told["hint"] == TOOL_TIMEOUT_HINT


async def test_a_real_cancellation_of_the_call_still_cancels_the_tool():
    """The run cancelled, or the worker stopping: the tool is cancelled and the activity ends cancelled, not as an
    error result the model would read."""
    started, seen = asyncio.Event(), []

    @tool(side_effecting=True)
    async def waits(flags: str) -> str:
        """Waits until cancelled.

        Args:
            flags: Ignored.
        """
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "never"

    activities = ToolActivities(ToolRegistry([waits]))
    request = ToolRequest(
        call=ToolCall(id="call_1", name="waits", arguments={"flags": ""}),
        tool=waits.spec(),
        idempotency_key="test/waits",
    )
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, activity_id="real-cancel")
    running = asyncio.ensure_future(environment.run(activities.run_tool, request))
    await started.wait()
    environment.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert seen == ["cancelled"]


def _activity_error(cause: BaseException, retry_state: RetryState | None) -> ActivityError:
    err = ActivityError(
        "Activity task failed",
        scheduled_event_id=5,
        started_event_id=6,
        identity="worker",
        activity_type="run_tool",
        activity_id="3",
        retry_state=retry_state,
    )
    err.__cause__ = cause
    return err


def test_a_retried_failure_and_the_sentence_that_it_gave_up_read_as_two_sentences():
    failed = ApplicationError("flaky: busy", type="RetryableToolError")
    said = final_message(_activity_error(failed, RetryState.MAXIMUM_ATTEMPTS_REACHED))
    assert said == "RetryableToolError: flaky: busy. Gave up after the last attempt the retry policy allows."


def test_a_heartbeat_timeout_names_the_heartbeat_timeout_and_what_stops_heartbeats():
    timed_out = TimeoutError("activity Heartbeat timeout", type=TimeoutType.HEARTBEAT, last_heartbeat_details=[])
    call = ToolCall(id="c1", name="report")
    told = tool_failure(call, report.spec(), _activity_error(timed_out, RetryState.MAXIMUM_ATTEMPTS_REACHED))
    assert told.error == (
        "TimeoutError: the worker running the tool sent no heartbeat for its heartbeat_timeout_seconds (5 s): the "
        "worker stopped, or the tool held up the worker's event loop (an async tool calling blocking code). Gave up "
        "after the last attempt the retry policy allows."
    )
    assert told.hint == TOOL_TIMEOUT_HINT


def test_a_fast_tool_past_the_fast_attempts_limit_names_that_limit_not_its_own_longer_timeout():
    timed_out = TimeoutError("timeout", type=TimeoutType.START_TO_CLOSE, last_heartbeat_details=[])
    spec = fast_report.spec().model_copy(update={"timeout_seconds": 60.0})
    told = tool_failure(ToolCall(id="c1", name="fast_report"), spec, _activity_error(timed_out, None))
    assert told.error.startswith("TimeoutError: the fast tool did not finish within 5 s, the longest a fast tool's")
    assert "(its timeout_seconds, 60 s, is cut to that)" in told.error
