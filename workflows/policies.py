"""Timeouts and retry policies of the activities the agent loop schedules.

Every policy is bounded (attempts and a schedule-to-close timeout), so nothing
retries forever; errors whose retry cannot help are named as non-retryable.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

MODEL_START_TO_CLOSE = timedelta(minutes=5)
MODEL_SCHEDULE_TO_CLOSE = timedelta(minutes=30)
MODEL_HEARTBEAT = timedelta(seconds=5)
"""The activity heartbeats every second while it waits (more often while text streams), so a dead worker's call
runs again elsewhere within seconds. A server outage longer than this makes the server give up on the attempt of
a call whose worker could not heartbeat meanwhile; the new attempt, on that worker, is answered with the call's
kept result, or joins the call still running (`activities/in_flight.py`): no tokens are spent twice."""
MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
    non_retryable_error_types=["ModelConfigError", "ModelRequestError"],
)

RATE_LIMIT_MAX_WAIT = timedelta(hours=6)
"""The longest Retry-After a run waits out on a durable timer; a longer one stops the run, saying so."""
RATE_LIMIT_MAX_WAITS = 3
"""Long waits for one model step before the run stops: a provider that keeps refusing is not waited on forever."""

TOOL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)

FAST_TOOL_TIMEOUT = timedelta(seconds=5)
"""An attempt of a fast tool (a local activity) at most: it runs inside the workflow's task, which it holds up."""
FAST_TOOL_SCHEDULE_TO_CLOSE = timedelta(seconds=30)
"""A fast tool's attempts together: its retries (`TOOL_RETRY`'s backoff) stay within the workflow's task too."""

DESCRIBE_TIMEOUT = timedelta(seconds=60)
DESCRIBE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
    non_retryable_error_types=["UnknownToolError"],
)

ARCHIVE_TIMEOUT = timedelta(seconds=60)
ARCHIVE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
)
RESULT_STEPS_INLINE_CHARS = 32 * 1024
"""A run whose steps hold more text than this ends with them in storage (`AgentResult.earlier`), not in its result:
history already holds each tool result once, in the tool's completion. `RunHandle.result()` joins them back."""
COUNTERS_EVERY = timedelta(seconds=5)
"""How often a run's step, token and cost search attributes are brought up to date while nothing else changes."""
