"""Local activities, which only the worker running the workflow can run, and what it says when it cannot.

A fast tool and the step archive run as local activities: inside the workflow's task, in the worker that runs the
workflow, whatever other worker of the task queue registers them. A worker of the user's own that lists
`AgentWorkflow` in `workflows=[...]` without Stalwart's activities cannot run them. The SDK refuses such a local
activity where the workflow schedules it, before any command is made, with a `ValueError` that names neither Stalwart
nor the fix; it fails the workflow task, and the run waits, retried by Temporal, until a worker that can run it
takes it. That wait is kept (a worker that registers the activities, once started, runs the run on from there, with
every step it took; a run failed instead would be lost to a mistake in the worker's setup, and would replay
differently on a worker set up right), and only the error changes: `StalwartActivitiesMissing`, naming the fix,
which `stalwart show` and `pending` repeat.
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.errors import ConfigurationError

T = TypeVar("T")

_NOT_REGISTERED = "is not registered on this worker"
"""What the SDK's refusal of a local activity the worker lacks says (`temporalio.worker._worker`, both of its
wordings: some activities registered, or none): tests/test_workflow_only_worker.py holds the SDK to it."""


class StalwartActivitiesMissing(ConfigurationError):
    """The worker running an agent workflow does not register Stalwart's activities, so it cannot run a local one.

    Not a Temporal failure: raised out of the workflow, it fails the workflow task, not the run, which waits for a
    worker that registers them. Still a `ValueError`, as the SDK's refusal it replaces."""


def missing(activity: str, needed_for: str) -> str:
    """The error of a worker that cannot run the local activity `activity`, needed for `needed_for`."""
    return (
        f"this worker runs Stalwart's agent workflow but does not register Stalwart's activities, so it cannot run "
        f"{needed_for}: a local activity (`{activity}`), which only the worker running the workflow can run. "
        "Register them on every worker that runs agent workflows: run `stalwart worker`, build the worker with "
        "`build_worker(client, ...)`, or give it `StalwartPlugin()` (`Worker(client, ..., "
        "plugins=[StalwartPlugin()])` or `Client.connect(..., plugins=[StalwartPlugin()])`) instead of listing "
        "`AgentWorkflow` in `workflows=[...]`. The run waits here with every step it took, and goes on once such a "
        "worker runs it."
    )


async def execute(activity: str, arg: Any, *, result_type: type[T], needed_for: str, **options: Any) -> T:
    """`workflow.execute_local_activity(activity, arg, result_type=..., **options)`, the same commands; a worker that
    does not register `activity` fails the workflow task with `StalwartActivitiesMissing` naming the fix, instead of
    the SDK's bare refusal. `needed_for`: what the run was doing, as the error says it ("the fast tool `x`")."""
    try:
        handle = workflow.start_local_activity(activity, arg, result_type=result_type, **options)
    except ValueError as err:
        if _NOT_REGISTERED not in str(err):
            raise
        raise StalwartActivitiesMissing(missing(activity, needed_for)) from err
    return await handle
