"""A workflow that moves payloads over Temporal's 2 MiB limit both ways: as an activity result and an activity input.

Only temporalio is imported at the top: the workflow sandbox re-imports this module.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy


class BigPayloadActivities:
    """Counts its calls, so a test can tell one clean attempt from an attempt that failed and was retried."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {"make_text": 0, "measure": 0}

    @activity.defn
    async def make_text(self, size: int) -> str:
        self.calls["make_text"] += 1
        line = "All work and no play makes a payload a dull payload.\n"
        return (line * (size // len(line) + 1))[:size]

    @activity.defn
    async def measure(self, text: str) -> int:
        self.calls["measure"] += 1
        return len(text)


@workflow.defn
class BigPayloadWorkflow:
    @workflow.run
    async def run(self, size: int) -> int:
        # A few attempts, not endless ones: without storage these activities fail every time, and the run
        # should then fail rather than retry forever.
        retry = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))
        text = await workflow.execute_activity_method(
            BigPayloadActivities.make_text, size, start_to_close_timeout=timedelta(minutes=5), retry_policy=retry
        )
        # Reversed, so the input is not byte for byte the result: stored payloads are content-addressed,
        # and the same bytes would be one object, leaving the input's storage untested.
        return await workflow.execute_activity_method(
            BigPayloadActivities.measure, text[::-1], start_to_close_timeout=timedelta(minutes=5), retry_policy=retry
        )
