"""Misleading messages (issue 11, defect 6): what a run says once it has stopped must be true then.

A final error does not promise a retry that will not come; a request too large for the provider is not retried
and says to make it smaller; a retried attempt's long failure still names its cause after Temporal stored it.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from flavors import Flavor, agent_for, run_agent
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

from stalwart.workflows import policies

from wire_server.script import Fail

TPM_TOO_LARGE = (
    "Request too large for gpt-4.1-mini in organization org-test on tokens per min (TPM): Limit 30000, "
    "Requested 45000. The input or output tokens must be reduced in order to run successfully."
)


async def test_misleading_messages_a_final_error_does_not_say_the_attempt_is_retried(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    attempts = policies.MODEL_RETRY.maximum_attempts
    script = wire.script(*[Fail(503, "server_error", "The server is overloaded") for _ in range(attempts)])
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    print(f"\n{flavor.id}: {result.error}")
    assert (result.stop_reason, len(script.requests)) == ("error", attempts)
    assert "503" in result.error and "The server is overloaded" in result.error
    assert "retried" not in result.error and "retrying" not in result.error
    assert "Gave up after the last attempt the retry policy allows." in result.error


@pytest.mark.parametrize(
    "fault",
    [
        Fail(413, "request_too_large", "Request exceeds the maximum size"),
        Fail(429, "tokens", TPM_TOO_LARGE),
    ],
    ids=["413", "429-tokens-per-minute"],
)
async def test_misleading_messages_a_request_too_large_is_not_retried_and_says_to_make_it_smaller(
    time_skipping_env, task_queue, wire, flavor: Flavor, fault: Fail
):
    script = wire.script(fault)
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, len(script.requests)) == ("error", 1)
    assert "too large" in result.error and "Waiting and retrying cannot help" in result.error
    assert "history_limit" in result.error and "retrying after" not in result.error


@activity.defn(name="long_failure_then_hang")
async def long_failure_then_hang() -> None:
    if activity.info().attempt == 1:
        raise ApplicationError("the disk is full on /var/data: " + "details " * 2000, type="DiskFull")
    await asyncio.sleep(30)  # the next attempt hangs: the run ends on its timeout, with the first failure as cause


@workflow.defn(name="LongFailureWorkflow", sandboxed=False)
class LongFailureWorkflow:
    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.execute_activity(
                "long_failure_then_hang",
                start_to_close_timeout=timedelta(seconds=2),
                retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=2),
            )
        except ActivityError as err:
            cause = err.cause
            while cause is not None and cause.__cause__ is not None:
                cause = cause.__cause__
            return str(cause)
        return "no failure"


@pytest.mark.slow
async def test_misleading_messages_a_retried_attempts_long_failure_keeps_its_cause_readable(dev_env, task_queue):
    """Temporal stores a retried attempt's failure in the run's state, up to about 4 KB: over that it read
    `Failure exceeds size limit.` and the cause was gone. Stalwart's converter fits failures, cause first."""
    async with Worker(
        dev_env.client,
        task_queue=task_queue,
        workflows=[LongFailureWorkflow],
        activities=[long_failure_then_hang],
        graceful_shutdown_timeout=timedelta(seconds=0),
    ):
        message = await dev_env.client.execute_workflow(
            "LongFailureWorkflow", id=f"long-failure-{task_queue}", task_queue=task_queue, result_type=str
        )
    print(f"\nthe cause as the workflow read it: {message[:120]!r} ... ({len(message)} characters)")
    assert "Failure exceeds size limit" not in message
    assert message.startswith("DiskFull: the disk is full on /var/data: details")  # type and cause first
    assert "characters cut to fit Temporal's failure size limit" in message
