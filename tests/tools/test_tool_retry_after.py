"""A tool that raises `RetryableToolError(retry_after=...)` says when its next attempt starts, as a service's
Retry-After does: Temporal takes the delay from the failure instead of the retry policy's backoff, for a full
activity and for a fast tool (a local activity) alike."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType

from stalwart.activities.tools import tool
from stalwart.activities.tools.registry import RetryableToolError
from stalwart.contracts.agent import MAX_SECONDS, AgentSpec, ScriptedReply, ScriptedToolCall

ATTEMPTS: dict[str, list[float]] = {}
"""When each attempt of `busy_twice` started, by target (monotonic seconds)."""

FIRST_RETRY_AFTER = 1.5
"""Longer than `TOOL_RETRY`'s first backoff (1 s): an attempt started this late came at the tool's word."""


@tool
def busy_service(target: str) -> str:
    """Asks a service about `target`; the service is always busy.

    Args:
        target: What to ask about.
    """
    raise RetryableToolError(f"{target} is busy", retry_after=0.25)


@tool(fast=True)
def busy_twice(target: str) -> str:
    """Looks up `target` in a cache that is busy for its first two attempts.

    Args:
        target: What to look up.
    """
    started = ATTEMPTS.setdefault(target, [])
    started.append(time.monotonic())
    if len(started) < 3:
        raise RetryableToolError("cache busy", retry_after=FIRST_RETRY_AFTER if len(started) == 1 else 0.05)
    return f"{target}: found"


def agent(name: str) -> AgentSpec:
    return AgentSpec(
        name=f"retry-after-{name}",
        tools=[name],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments={"target": "db"})]),
            ScriptedReply(text="done"),
        ],
    )


async def test_a_tools_retry_after_is_the_delay_temporal_records_for_its_next_attempt(stalwart, worker_with):
    async with worker_with(busy_service):
        handle = await stalwart.start(agent("busy_service"), "ask about the db")
        result = await handle.result()
        seen = await handle.model_input(2)
        history = await stalwart.temporal.get_workflow_handle(handle.run_id).fetch_history()
    assert result.stop_reason == "done", result.error
    (answered,) = [r for m in seen.messages if m.role == "tool" for r in m.tool_results]
    assert "db is busy" in json.loads(answered.for_model())["error"]
    (failed,) = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    failure = failed.activity_task_failed_event_attributes.failure.application_failure_info
    assert failure.type == "RetryableToolError"
    assert failure.next_retry_delay.ToTimedelta() == timedelta(seconds=0.25)


async def test_a_fast_tool_retried_after_its_own_delay_returns_its_result_at_the_attempt_that_succeeds(
    stalwart, worker_with
):
    ATTEMPTS.clear()
    async with worker_with(busy_twice):
        result = await (await stalwart.start(agent("busy_twice"), "look up the db")).result()
    assert result.stop_reason == "done", result.error
    first, second, _ = ATTEMPTS["db"]
    assert second - first >= FIRST_RETRY_AFTER, "the second attempt waited the tool's delay, not the policy's backoff"
    assert result.steps[2].result == "db: found"


@pytest.mark.parametrize("delay", [-1, float("nan"), float("inf")])
def test_a_retry_after_that_is_no_number_of_seconds_is_refused_where_the_tool_raises_it(delay):
    with pytest.raises(ValueError, match="retry_after must be a number of seconds, 0 or more"):
        RetryableToolError("busy", retry_after=delay)


def test_a_retry_after_longer_than_temporal_holds_is_refused_naming_the_bound_and_the_message():
    """1e15 s passed the check, then could not become the retry delay (`OverflowError`), which replaced "busy"."""
    refused = r"RetryableToolError\('busy'\): .* at most 157,680,000 \(5 years\); got 1000000000000000.0"
    with pytest.raises(ValueError, match=refused):
        RetryableToolError("busy", retry_after=1e15)


def test_a_retry_after_of_the_longest_duration_temporal_holds_is_kept():
    assert RetryableToolError("busy", retry_after=MAX_SECONDS).retry_after == MAX_SECONDS
