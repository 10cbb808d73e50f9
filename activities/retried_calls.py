"""How the calls of a run that its budget is about to cut had failed: the last failure of each of its activities
still waiting to retry (or retrying), as the server keeps it.

When a turn's wall-clock timer fires while a call waits between retries, the workflow cancels the call, and a
cancelled activity says nothing of why its attempts failed: only the server's description of the run (its pending
activities' `last_failure`) still holds it. The workflow asks for it here just before it cancels, so the run's
error can say why the calls kept failing instead of only that the budget ran out.

A fast tool's call (a local activity) is not in that description: the worker that runs its attempts keeps how
they failed (`FastToolFailures`), and its attempt refusing to start past the deadline says it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Hashable
from datetime import datetime
from typing import TypeVar

from temporalio import activity
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from stalwart.activities.budget_guard import refuse_after
from stalwart.contracts import failure_types, names
from stalwart.contracts.a2a import A2A_DELEGATE
from stalwart.workflows.failures import innermost_message, without_retry_promise

T = TypeVar("T")

CALLS = {
    names.MODEL_ACTIVITY: "the model call",
    names.RUN_TOOL_ACTIVITY: "a tool call",
    A2A_DELEGATE: "an A2A delegation",
}
"""What each activity type is to a reader of the run's error."""


@activity.defn(name=names.RETRIED_CALLS_ACTIVITY)
async def retried_calls() -> list[str]:
    """One sentence for each activity of the calling run that has failed an attempt: which call, how many attempts
    failed, and the last one's failure (its type and message, decoded with the worker's own codec)."""
    info = activity.info()
    if info.workflow_id is None:  # not scheduled by a workflow: no run to describe
        return []
    client = activity.client()
    handle = client.get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    description = await handle.describe()
    found = []
    for pending in description.raw_description.pending_activities:
        if pending.HasField("last_failure"):
            found.append(_sentence(pending, await _last_failure(client.data_converter, pending)))
    return found


async def _last_failure(converter: DataConverter, pending: PendingActivityInfo) -> str:
    """The last attempt's failure, decoded; one this worker cannot decode (sealed with a key it lacks) is said so,
    and the other calls are still named."""
    try:
        failure = await converter.decode_failure(pending.last_failure)
    except Exception as err:
        return f"a failure this worker cannot decode ({type(err).__name__}: {err})"
    # Its attempts end here: a "retrying ..." in the last one's message is no longer true.
    return without_retry_promise(_as_raised(failure))


def _as_raised(failure: BaseException) -> str:
    """The failure as the activity raised it, type and message (a tool's names the tool); one without a type of its
    own (a timeout) by the failure it wraps."""
    if isinstance(failure, ApplicationError) and failure.type:
        return f"{failure.type}: {failure.message}"
    return innermost_message(failure)


def _sentence(pending: PendingActivityInfo, failure: str) -> str:
    kind = pending.activity_type.name
    return retried_sentence(CALLS.get(kind, f"activity {kind}"), pending.attempt, failure)


def retried_sentence(call: str, attempt: int, failure: str) -> str:
    """How `call` had failed: `attempt` is the attempt running or waiting to start, so every one before it failed,
    the last with `failure`."""
    failed = max(attempt - 1, 1)
    attempts = "its only attempt" if failed == 1 else f"{failed} attempts"
    return f"{call} failed {attempts}, the last with {failure}"


class FastToolFailures:
    """The last failure of each fast tool call retrying on this worker, by (run id, activity id).

    A fast tool is a local activity: its attempts all run on the worker that runs its workflow's task, and the
    server's description of the run, which `retried_calls` reads, does not list them. Its retries hold that task,
    so the deadline's timer is not heard meanwhile, and the call ends at its first attempt past the deadline,
    which refuses to start: that refusal names the last failure (in its `BUDGET_OVER` failure's details, which reach
    the workflow in the local activity's marker, so a replay reads the same)."""

    KEPT = 256
    """Calls remembered at most: one whose retries end without an attempt here (its run ended, its workflow task
    moved to another worker) is forgotten once this many newer ones have failed here."""

    def __init__(self) -> None:
        self._last: OrderedDict[Hashable, str] = OrderedDict()

    def refuse_after(self, deadline: datetime | None, what: str, key: Hashable, attempt: int) -> None:
        """`refuse_after`, naming how the call's earlier attempts failed, if they did here."""
        last = self._last.get(key)
        said = [] if last is None else [retried_sentence(CALLS[names.RUN_TOOL_ACTIVITY], attempt, last)]
        try:
            refuse_after(deadline, what, *said)
        except ApplicationError:
            self._last.pop(key, None)  # the call ends here
            raise

    async def noting(self, key: Hashable, attempt: Awaitable[T]) -> T:
        """`attempt`'s outcome; its failure is kept if another attempt follows (a retryable tool error)."""
        try:
            result = await attempt
        except ApplicationError as err:
            if err.type == failure_types.RETRYABLE_TOOL_ERROR and not err.non_retryable:
                self._last[key] = without_retry_promise(_as_raised(err))
                self._last.move_to_end(key)
                while len(self._last) > self.KEPT:
                    self._last.popitem(last=False)
            else:
                self._last.pop(key, None)
            raise
        self._last.pop(key, None)
        return result
