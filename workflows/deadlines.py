"""Deadlines and cancellation in one place: work raced against a durable timer.

The wall-clock budget is an absolute deadline, so it survives continue-as-new unchanged:
the next run sleeps only what is left. When the timer wins, the work is cancelled (its
activities and child workflows with it) and awaited, so nothing runs on after the budget. Just
before it cancels, the run asks the server why the calls it cuts were failing (`retried_calls`, an
activity, best effort), since a cancelled call carries no failure; the work runs on while it asks.

Once the timer has fired, the turn ends by the cut, whatever the work does while the run asks: a result it finishes
meanwhile is dropped, and a failure for good it meets meanwhile (a call failing non-retryably) does not end the turn
either, since the budget was reached first, as history records it (the timer fired before the failure came). So the
outcome does not hang on how long the question takes. The failure is not lost: the cut carries its message
(`DeadlineReached.failed`) and the run's error names it after the retried calls, because it says more than their
last attempts did (a call that failed for good will not succeed with a larger budget).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    RetryState,
    TimeoutError,
    is_cancelled_exception,
)

from stalwart.contracts import names
from stalwart.contracts.activities import BUDGET_OVER
from stalwart.workflows import local_activities, patches
from stalwart.workflows.failures import final_message

T = TypeVar("T")


class DeadlineReached(Exception):
    """The durable timer fired before the work finished; the work has been cancelled.

    `retried` says, one sentence each, how the calls the timer cut had failed their attempts so far (`before`);
    `failed`, how the work failed for good after the timer fired, before it was cancelled (None if it did not)."""

    def __init__(self, retried: Sequence[str] = (), failed: str | None = None) -> None:
        super().__init__(*retried)
        self.retried = tuple(retried)
        self.failed = failed


def capped(
    deadline: datetime | None, start_to_close: timedelta, schedule_to_close: timedelta | None = None
) -> tuple[timedelta, timedelta | None]:
    """An activity's timeouts cut to the time left before `deadline` (and `CAP_GRACE`), so the server starts no
    attempt after it.

    The grace lets the workflow's own deadline timer fire first and cancel the activity, as it does while a
    worker runs; an attempt handed out within the grace refuses to start by itself (`BUDGET_OVER`).
    Raises `DeadlineReached` when no time is left: the activity is not scheduled at all.
    """
    if deadline is None:
        return start_to_close, schedule_to_close
    left = deadline - workflow.now()
    if left <= timedelta(0):
        raise DeadlineReached()
    left += CAP_GRACE
    return min(start_to_close, left), left if schedule_to_close is None else min(schedule_to_close, left)


async def execute_activity(
    activity: str,
    arg: Any,
    *,
    result_type: type[T],
    deadline: datetime | None,
    start_to_close: timedelta,
    schedule_to_close: timedelta | None = None,
    local: bool = False,
    needed_for: str = "this step of the run",
    **options: Any,
) -> T:
    """Run `activity` (locally with `local`) with its timeouts `capped` at `deadline`; the other `options` go to
    `workflow.execute_activity` (or `execute_local_activity`) as they are. `needed_for`: what a local activity does,
    as the error of a worker that cannot run it says it (`local_activities.execute`).

    Raises `DeadlineReached` when no time is left to schedule it, or when it failed because the deadline passed
    (`budget_over`); any other failure is raised on as the `ActivityError` it is, a local activity's too."""
    start_to_close, schedule_to_close = capped(deadline, start_to_close, schedule_to_close)
    options.update(start_to_close_timeout=start_to_close, schedule_to_close_timeout=schedule_to_close)
    try:
        if local:
            return await _local(activity, arg, result_type, options, needed_for)
        return await workflow.execute_activity(activity, arg, result_type=result_type, **options)
    except ActivityError as err:
        if budget_over(err, deadline):
            raise DeadlineReached(_named_by_the_refusal(err)) from err
        raise


def _named_by_the_refusal(err: ActivityError) -> list[str]:
    """How the call had failed its earlier attempts, as its attempt that refused to start past the deadline said: a
    fast tool's does (its attempts are not in the server's description, which `retried_calls` reads)."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type == BUDGET_OVER:
        return [said for said in cause.details if isinstance(said, str)]
    return []


async def _local(activity: str, arg: Any, result_type: type[T], options: dict[str, Any], needed_for: str) -> T:
    """A local activity's result; its failure for good in an `ActivityError`, as a full activity's comes.

    The SDK raises a failure for good that a local activity raised itself (non-retryable, or its last attempt's
    when its attempts are spent) unwrapped, though a timeout comes in an `ActivityError`; callers that read an
    `ActivityError` missed it: a fast tool that kept failing failed the run instead of giving the model its error,
    and its attempt refusing to start past the deadline (`BUDGET_OVER`; its retries hold the workflow's task, so the
    deadline's timer is not heard meanwhile) failed the run instead of cutting the turn. Runs recorded before raised
    it as it came."""
    try:
        return await local_activities.execute(activity, arg, result_type=result_type, needed_for=needed_for, **options)
    except ApplicationError as err:
        if not patches.active(patches.LOCAL_ACTIVITY_FAILURES_AS_ACTIVITY_ERRORS):
            raise
        raise ActivityError(
            "Local activity failed",
            scheduled_event_id=0,
            started_event_id=0,
            identity="",
            activity_type=activity,
            activity_id="",
            retry_state=RetryState.NON_RETRYABLE_FAILURE if err.non_retryable else None,
        ) from err


def cuts(deadline: datetime | None, schedule_to_close: timedelta, scheduled_at: datetime) -> bool:
    """Whether `capped` cut `schedule_to_close` to `deadline` for an activity scheduled at `scheduled_at`: then its
    retries ran out of time because of the run's budget, not its own policy."""
    return deadline is not None and deadline - scheduled_at + CAP_GRACE < schedule_to_close


CAP_GRACE = timedelta(seconds=5)
"""How long after the run's deadline the server may still hand out an attempt, which then refuses to start."""


def budget_over(err: ActivityError, deadline: datetime | None) -> bool:
    """Whether an activity failed because its run's deadline passed: it refused to start (`BUDGET_OVER`),
    or its schedule-to-close timeout, capped at the deadline, ran out."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type == BUDGET_OVER:
        return True
    return isinstance(cause, TimeoutError) and deadline is not None and workflow.now() >= deadline


async def before(deadline: datetime | None, work: Coroutine[Any, Any, T], *, summary: str) -> T:
    """Run `work` until `deadline`; raise `DeadlineReached` if the deadline comes first, saying how the calls it
    cut had failed so far (`retried_calls`), and how the work failed for good meanwhile, if it did.

    A cancellation of the caller cancels both the work and the timer. An exception that is no Temporal failure
    (`FailureError`) is raised on as it is, even after the timer fired: continuing as new is no failure of the work,
    and a bug must fail the workflow task (to be fixed and retried), not end the turn as cut.
    """
    task = asyncio.ensure_future(work)
    if deadline is None:
        try:
            return await task
        except asyncio.CancelledError:
            task.cancel()
            raise
    left = max((deadline - workflow.now()).total_seconds(), 0.0)
    timer = asyncio.ensure_future(workflow.sleep(left, summary=summary))
    try:
        await workflow.wait([task, timer], return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        timer.cancel()
        raise
    if task.done():
        timer.cancel()
        return task.result()
    try:
        retried = await retried_calls()
    except asyncio.CancelledError:
        task.cancel()
        raise
    ended_while_asking = task.done()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except DeadlineReached as met:  # met the deadline itself while the run asked (a retry's attempt refusing to
        # start past it): the cut says why the calls were failing all the same, with what a fast tool's refusal said
        retried = [*retried, *met.retried]
    except FailureError as err:  # a failure for good after the timer fired: the cut still ends the turn
        if not patches.active(patches.BUDGET_CUT_OUTRANKS_LATER_FAILURES):
            raise  # runs recorded before passed it on when it came while the run asked
        own = ended_while_asking and not is_cancelled_exception(err)  # not the cancellation's own doing
        raise DeadlineReached(retried, final_message(err) if own else None) from err
    raise DeadlineReached(retried)


RETRIED_CALLS_TIMEOUT = timedelta(seconds=10)
"""How long the run waits, at its deadline, to learn why the calls it cuts had failed; it ends without it after."""


async def retried_calls() -> list[str]:
    """How each call still running or waiting between retries had failed its attempts, one sentence each; asked
    just before the deadline's timer cancels them.

    A cancelled activity carries no failure, and one waiting out its backoff is cancelled at once: only the
    server's description of the run still holds its last attempt's failure, which an activity reads
    (`activities/retried_calls.py`). An activity, not a local one: a worker that runs only workflows fails the
    workflow task that schedules a local activity it does not register (`local_activities.StalwartActivitiesMissing`),
    which would hold the run up over a question it can do without. Best effort:
    when no worker answers in time the run ends as it did, saying only that the budget was reached. Runs recorded
    before the patch asked nothing."""
    if not patches.active(patches.BUDGET_NAMES_RETRIED_FAILURES):
        return []
    try:
        return await workflow.execute_activity(
            names.RETRIED_CALLS_ACTIVITY,
            result_type=list[str],
            schedule_to_close_timeout=RETRIED_CALLS_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
            summary="why the calls the budget cuts were failing",
        )
    except ActivityError:
        return []


def cut_short(why: str, retried: Sequence[str], failed: str | None = None) -> str | None:
    """The run's error when its budget cut calls that had failed attempts, or work that failed for good after the
    timer fired (`failed`): that the budget ran out (`why`, as `reached` puts it), how each call had failed, then
    the work's own failure; None when there is neither."""
    if not retried and not failed:
        return None
    said = why.removeprefix("cancelled: ")
    if retried:
        calls = "a call was" if len(retried) == 1 else "calls were"
        said += f" while {calls} being retried: {'; '.join(retried)}"
    if failed:
        said += f"; then, before the turn was cut, {failed}"
    return said


def earliest(*deadlines: datetime | None) -> datetime | None:
    """The earliest of the deadlines given; None when there is none."""
    given = [deadline for deadline in deadlines if deadline is not None]
    return min(given) if given else None


def inherited_first(deadline: datetime | None, inherited: datetime | None) -> bool:
    """Whether a turn's `deadline` is the one it inherited from the runs that started it (a parent agent's, a
    user's workflow's), not its own `max_seconds`."""
    return deadline is not None and inherited is not None and deadline >= inherited


def timer_end(deadline: datetime | None, inherited: datetime | None) -> datetime | None:
    """When a turn's wall-clock timer fires: at its deadline, or half `CAP_GRACE` after an inherited one.

    No call of the turn starts after an inherited deadline (its activities are capped at it and refuse to start
    late); the grace lets the parent's own timer, set for that instant, cancel the turn first, so the parent reads
    its sub-agent as cancelled by its budget, not as one that stopped by itself an instant before. Half of it: the
    turn's timer still fires before its activities' timeouts, which end `CAP_GRACE` after the deadline.
    """
    if inherited_first(deadline, inherited):
        assert deadline is not None
        return deadline + CAP_GRACE / 2
    return deadline


def reached(max_seconds: float | None, deadline: datetime | None, inherited: datetime | None) -> str:
    """What a step cut off by the turn's wall-clock timer says."""
    if inherited_first(deadline, inherited) or max_seconds is None:
        return "cancelled: the deadline of the run that started this one was reached"
    return f"cancelled: wall-clock budget of {max_seconds:g}s reached"
