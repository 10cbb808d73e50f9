"""How a workflow schedules the A2A activities: names, timeouts, retry policies, and `delegate`/`describe`, which
schedule them with these, from workflow code only.

Workflow code imports this module, so it imports contracts and the SDK only; the names and error
types it schedules by live in `contracts/a2a.py`, shared with the activities. Every policy
is bounded; errors that a retry cannot fix are listed as non-retryable, so
they come back at once as `Delegation failed: ...`.

An attempt that times out or dies resumes following the same remote task
(its id is in the last heartbeat), so a retry does not send the task twice.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from stalwart.contracts.a2a import (
    A2A_DELEGATE,
    A2A_DESCRIBE,
    PROTOCOL_ERROR,
    REQUEST_ERROR,
    TASK_ERROR,
    A2AAgentCard,
    A2ADelegateRequest,
    A2ADelegateResult,
    A2ADescribeRequest,
)
from stalwart.workflows import deadlines

NON_RETRYABLE_ERRORS = [PROTOCOL_ERROR, REQUEST_ERROR, TASK_ERROR]

DESCRIBE_START_TO_CLOSE = timedelta(seconds=60)
DESCRIBE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
    non_retryable_error_types=NON_RETRYABLE_ERRORS,
)

DELEGATE_START_TO_CLOSE = timedelta(minutes=30)
"""One attempt: send the message and follow the task until it ends."""
DELEGATE_SCHEDULE_TO_CLOSE = timedelta(hours=2)
"""All attempts together; a remote agent that stays unreachable this long fails the delegation."""
DELEGATE_HEARTBEAT = timedelta(seconds=20)
"""The activity heartbeats every 5 s while it waits; a dead worker is noticed within this, and a
cancellation reaches the activity within about 80% of it (the SDK's heartbeat throttle)."""
DELEGATE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
    non_retryable_error_types=NON_RETRYABLE_ERRORS,
)


async def delegate(
    request: A2ADelegateRequest, *, summary: str | None = None, deadline: datetime | None = None
) -> A2ADelegateResult:
    """Run `a2a_delegate` with the policy above; call from a workflow.

    With `deadline` (the run's wall-clock budget), no attempt starts after it: the timeouts end there
    (`deadlines.capped`), so a remote agent is not sent the task once the budget is over, even while the
    workflow itself cannot run to cancel the activity.
    """
    start_to_close, schedule_to_close = deadlines.capped(deadline, DELEGATE_START_TO_CLOSE, DELEGATE_SCHEDULE_TO_CLOSE)
    return await workflow.execute_activity(
        A2A_DELEGATE,
        request,
        result_type=A2ADelegateResult,
        start_to_close_timeout=start_to_close,
        schedule_to_close_timeout=schedule_to_close,
        heartbeat_timeout=DELEGATE_HEARTBEAT,
        retry_policy=DELEGATE_RETRY,
        summary=summary,
    )


async def describe(request: A2ADescribeRequest, *, summary: str | None = None) -> A2AAgentCard:
    """Run `a2a_describe` with the policy above; call from a workflow."""
    return await workflow.execute_activity(
        A2A_DESCRIBE,
        request,
        result_type=A2AAgentCard,
        start_to_close_timeout=DESCRIBE_START_TO_CLOSE,
        retry_policy=DESCRIBE_RETRY,
        summary=summary,
    )
