"""A tool failing every attempt while the run's wall-clock timer fires between two of them (issue 43, item 6): the
timer cancels the call as it waits out its backoff, and a cancelled activity carries no failure, so the run ended
`max_seconds` saying only that the budget ran out. Its error names the last attempt's failure now (type, tool and
message), read from the server's description of the run just before the call is cancelled.

With `max_seconds=6`, attempts start at about 0, 1 and 3 s (`TOOL_RETRY`'s backoff) and the fourth is due at about
7 s: within the 5 s the activity's timeouts run past the deadline (`deadlines.CAP_GRACE`), so the server has not
given up on the call when the timer fires at 6 s, however long an attempt takes on a busy machine (up to a second).
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from types import SimpleNamespace
from typing import Any, cast

from temporalio import activity, workflow
from temporalio.api.common.v1 import ActivityType
from temporalio.api.failure.v1 import Failure
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from stalwart.activities.retried_calls import retried_calls
from stalwart.activities.tools.registry import RetryableToolError, Tool, tool
from stalwart.client.api import StalwartClient
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.contracts.errors import EncryptionKeyError
from stalwart.contracts.run import AgentResult
from stalwart.workers.worker import build_worker, default_registry
from stalwart.workflows import deadlines

attempts: list[str] = []


@tool(side_effecting=True, heartbeat_timeout_seconds=60)
async def always_locked(target: str) -> str:
    """Acts on `target`, which another job keeps locked.

    Args:
        target: What to act on.
    """
    attempts.append(target)
    raise RetryableToolError(f"{target} is locked by another job")


async def test_a_tool_call_cut_by_the_deadline_between_retries_names_its_last_failure(
    own_time_skipping_env, task_queue
):
    attempts.clear()
    result = await _run_locked(own_time_skipping_env.client, task_queue, always_locked, max_seconds=6)
    assert result.stop_reason == "max_seconds", result.error
    assert result.error == (
        "wall-clock budget of 6s reached while a call was being retried: a tool call failed "
        f"{len(attempts)} attempts, the last with RetryableToolError: always_locked: db is locked by another job"
    )
    assert result.steps[-1].error == "cancelled: wall-clock budget of 6s reached"


class _Described:
    """A client whose run has two calls retrying: the model call's last failure sealed with a key this worker
    lacks, the tool call's readable."""

    def __init__(self) -> None:
        self.data_converter = self

    def get_workflow_handle(self, workflow_id: str, run_id: str | None = None) -> _Described:
        return self

    async def describe(self) -> Any:
        sealed = PendingActivityInfo(
            activity_type=ActivityType(name=names.MODEL_ACTIVITY), attempt=3, last_failure=Failure(message="sealed")
        )
        readable = PendingActivityInfo(
            activity_type=ActivityType(name=names.RUN_TOOL_ACTIVITY), attempt=2, last_failure=Failure(message="busy")
        )
        return SimpleNamespace(raw_description=DescribeWorkflowExecutionResponse(pending_activities=[sealed, readable]))

    async def decode_failure(self, failure: Failure) -> BaseException:
        if failure.message == "sealed":
            raise EncryptionKeyError("this data was encrypted with key 'k2', which is not among the configured keys")
        return ApplicationError("db is busy", type="RetryableToolError")


async def test_a_last_failure_the_worker_cannot_decode_is_said_so_and_the_other_calls_still_named():
    environment = ActivityEnvironment(client=cast(Client, _Described()))
    environment.info = dataclasses.replace(environment.info, workflow_id="wf", workflow_run_id="run")
    assert await environment.run(retried_calls) == [
        "the model call failed 2 attempts, the last with a failure this worker cannot decode (EncryptionKeyError: "
        "this data was encrypted with key 'k2', which is not among the configured keys)",
        "a tool call failed its only attempt, the last with RetryableToolError: db is busy",
    ]


@activity.defn(name=names.RETRIED_CALLS_ACTIVITY)
async def _slow_retried_calls() -> list[str]:
    await asyncio.sleep(3)  # the cut work meets the deadline itself meanwhile
    return ["the model call failed 2 attempts, the last with ModelUnavailableError: down"]


@workflow.defn(name="CutWhileAsking", sandboxed=False)
class _CutWhileAsking:
    """Work that meets the deadline by itself (a retry's attempt refusing to start past it) while the run asks
    why its calls were failing."""

    @workflow.run
    async def run(self, said: list[str]) -> list[str]:
        deadline = workflow.now() + timedelta(seconds=1)

        async def work() -> None:
            await workflow.sleep(2)  # a second after the timer: under load, not in the same workflow task
            raise deadlines.DeadlineReached(said)  # what the refusing attempt said of its call (a fast tool's)

        try:
            await deadlines.before(deadline, work(), summary="budget")
        except deadlines.DeadlineReached as cut:
            return list(cut.retried)
        return []


async def test_work_meeting_the_deadline_while_the_run_asks_why_still_names_the_calls_that_failed(dev_env, task_queue):
    async with Worker(
        dev_env.client, task_queue=task_queue, workflows=[_CutWhileAsking], activities=[_slow_retried_calls]
    ):
        retried = await dev_env.client.execute_workflow(_CutWhileAsking.run, [], id=task_queue, task_queue=task_queue)
    assert retried == ["the model call failed 2 attempts, the last with ModelUnavailableError: down"]


async def test_work_meeting_the_deadline_while_the_run_asks_keeps_what_its_refusal_said_after_the_servers_names(
    dev_env, task_queue
):
    fast = "a tool call failed 2 attempts, the last with RetryableToolError: lookup: busy"
    async with Worker(
        dev_env.client, task_queue=task_queue, workflows=[_CutWhileAsking], activities=[_slow_retried_calls]
    ):
        retried = await dev_env.client.execute_workflow(
            _CutWhileAsking.run, [fast], id=task_queue, task_queue=task_queue
        )
    assert retried == ["the model call failed 2 attempts, the last with ModelUnavailableError: down", fast]


@workflow.defn(name="FailsWhileAsking", sandboxed=False)
class _FailsWhileAsking:
    """Work that fails for good (not by the deadline) after the timer fired, while the run asks why its calls were
    failing: before the cut cancels it."""

    @workflow.run
    async def run(self) -> list[str]:
        deadline = workflow.now() + timedelta(seconds=1)

        async def work() -> None:
            await workflow.sleep(2)  # a second after the timer: under load, not in the same workflow task
            raise ApplicationError("the ledger refused the entry", non_retryable=True)

        try:
            await deadlines.before(deadline, work(), summary="budget")
        except deadlines.DeadlineReached as cut:
            return [*cut.retried, f"then: {cut.failed}"]
        return []


async def test_work_failing_for_good_while_the_run_asks_why_is_cut_all_the_same_and_the_cut_names_its_failure(
    dev_env, task_queue
):
    async with Worker(
        dev_env.client, task_queue=task_queue, workflows=[_FailsWhileAsking], activities=[_slow_retried_calls]
    ):
        said = await dev_env.client.execute_workflow(_FailsWhileAsking.run, id=task_queue, task_queue=task_queue)
    assert said == [
        "the model call failed 2 attempts, the last with ModelUnavailableError: down",
        "then: the ledger refused the entry",
    ]


fast_attempts: list[str] = []


@tool(fast=True, side_effecting=True)
async def always_locked_fast(target: str) -> str:
    """Acts on `target` at once (a fast tool: a local activity), but another job keeps it locked.

    Args:
        target: What to act on.
    """
    fast_attempts.append(target)
    raise RetryableToolError(f"{target} is locked by another job")


async def _run_locked(client: Client, task_queue: str, locked: Tool, *, max_seconds: int) -> AgentResult:
    """A run whose one tool call is `locked` (a tool that keeps failing), with `max_seconds`, to its end."""
    registry = default_registry()
    registry.register(locked)
    name = locked.name
    agent = AgentSpec(
        name="locked",
        tools=[name],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments={"target": "db"})]),
            ScriptedReply(text="never reached"),
        ],
        budgets=Budgets(max_seconds=max_seconds),
    )
    async with build_worker(client, task_queue=task_queue, registry=registry):
        handle = await StalwartClient(client, task_queue=task_queue).start(agent, "act")
        return await handle.result()


async def _run_always_locked_fast(client: Client, task_queue: str) -> AgentResult:
    """A run whose one tool call is `always_locked_fast`, with 2 s of `max_seconds`, to its end."""
    fast_attempts.clear()
    return await _run_locked(client, task_queue, always_locked_fast, max_seconds=2)


async def test_a_fast_tool_retried_past_the_deadline_stops_the_turn_by_its_budget_instead_of_failing_the_run(
    dev_env, task_queue
):
    """A local activity retries inside the worker, holding the workflow task, so the turn's timer is not heard
    while it does: the attempt due after the deadline (about 3 s, after 1 and 2 s of backoff) refuses to start
    (`BUDGET_OVER`, a failure for good), which the SDK raises unwrapped from a local activity, not in an
    `ActivityError`. It failed the run; it is the budget's cut, as it is for a full activity."""
    result = await _run_always_locked_fast(dev_env.client, task_queue)
    assert result.stop_reason == "max_seconds", result.error
    assert len(fast_attempts) >= 2  # it was being retried when the deadline came
    assert result.steps[-1].error == "cancelled: wall-clock budget of 2s reached"


async def test_a_fast_tool_retried_past_the_deadline_names_its_last_failure(dev_env, task_queue):
    """The server's description, which names a full activity's last failure, does not list local activities: the
    attempt that refuses to start past the deadline names its call's last failure itself (its attempts all ran on
    this worker)."""
    result = await _run_always_locked_fast(dev_env.client, task_queue)
    assert result.stop_reason == "max_seconds", result.error
    assert result.error == (
        "wall-clock budget of 2s reached while a call was being retried: a tool call failed "
        f"{len(fast_attempts)} attempts, the last with RetryableToolError: always_locked_fast: db is locked by another "
        "job"
    )
