"""No side effect after the budget: an activity checks its run's deadline before it acts.

The workflow caps every activity's schedule-to-close timeout at the time its run has
left, so the server does not start an attempt after the deadline. This check is the
second line: an attempt the server did hand out (a clock a little off, a task picked
up just before the timeout) still does nothing, and fails non-retryably with
`BUDGET_OVER`, which the workflow reads as its `max_seconds` stop.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from temporalio.exceptions import ApplicationError

from stalwart.contracts.activities import BUDGET_OVER


def refuse_after(deadline: datetime | None, what: str, *details: Any) -> None:
    """Raise `BUDGET_OVER` if `deadline` has passed; `what` names the work that was not started, `details` go with
    the failure (a fast tool's say how its earlier attempts failed: `FastToolFailures`)."""
    if deadline is None:
        return
    now = datetime.now(UTC)
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    if now >= deadline:
        late = (now - deadline).total_seconds()
        raise ApplicationError(
            f"budget over: the run's wall-clock budget (max_seconds) ended {late:.1f}s ago, at "
            f"{deadline.isoformat(timespec='seconds')}; {what} was not started. Raise max_seconds in the agent "
            "file to give runs more time.",
            *details,
            type=BUDGET_OVER,
            non_retryable=True,
        )
