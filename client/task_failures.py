"""Why workers fail a run's workflow task, read from its history.

A worker that cannot run a run's code (it lacks the key the run was sealed with, or its code cannot replay the
history) fails the workflow task again and again, and the run waits in silence; `stalwart show` and `pending`
say why, whether they read the run live (`client/reader.py`) or rebuild it from history (`client/offline.py`).
"""

from __future__ import annotations

from temporalio.api.history.v1 import HistoryEvent

from stalwart.contracts import failure_types

_SEALED = (failure_types.ENCRYPTION_KEY_ERROR, failure_types.MISSING_ENCRYPTION_KEY)
"""The failure types of a payload the worker cannot open: the operator's fix is the same for both."""


def failed_task(events: list[HistoryEvent]) -> str | None:
    """The error a worker failed the run's last workflow task with (its type, or its message), or None when the
    last one completed. The worker's later attempts at it are not in history: only the first failure is."""
    last = next(
        (
            e
            for e in reversed(events)
            if e.HasField("workflow_task_completed_event_attributes")
            or e.HasField("workflow_task_failed_event_attributes")
        ),
        None,
    )
    if last is None or not last.HasField("workflow_task_failed_event_attributes"):
        return None
    failure = last.workflow_task_failed_event_attributes.failure
    causes = [failure]
    while causes[-1].HasField("cause"):  # a payload the worker cannot open fails as the cause of the SDK's
        causes.append(causes[-1].cause)  # "Failed decoding arguments" when it is an activity's result
    sealed = next((f.application_failure_info.type for f in causes if f.application_failure_info.type in _SEALED), None)
    return sealed or failure.application_failure_info.type or failure.message or "an error"


def failing_task_note(kind: str) -> str:
    """What to tell the operator of a run whose workflow task fails with `kind`, and what to do about it."""
    if kind in _SEALED:
        hint = ": give the workers the key the run was sealed with (STALWART_ENCRYPTION_KEYS)"
    elif kind == failure_types.ACTIVITIES_MISSING:
        hint = (
            ": register Stalwart's activities on every worker that runs agent workflows (`stalwart worker`, "
            "`build_worker` or `StalwartPlugin`), not `AgentWorkflow` alone"
        )
    else:
        hint = ""
    return (
        f"a worker fails this run's workflow task ({kind}); the run waits until a worker can run it: "
        f"the worker's log says why{hint}"
    )
