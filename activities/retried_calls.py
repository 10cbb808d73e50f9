"""How the calls of a run that its budget is about to cut had failed: the last failure of each of its activities
still waiting to retry (or retrying), as the server keeps it.

When a turn's wall-clock timer fires while a call waits between retries, the workflow cancels the call, and a
cancelled activity says nothing of why its attempts failed: only the server's description of the run (its pending
activities' `last_failure`) still holds it. The workflow asks for it here just before it cancels, so the run's
error can say why the calls kept failing instead of only that the budget ran out.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from stalwart.contracts import names
from stalwart.contracts.a2a import A2A_DELEGATE
from stalwart.workflows.failures import innermost_message, without_retry_promise

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
    call = CALLS.get(kind, f"activity {kind}")
    # `attempt` is the attempt running or waiting to start: every one before it failed.
    failed = max(pending.attempt - 1, 1)
    attempts = "its only attempt" if failed == 1 else f"{failed} attempts"
    return f"{call} failed {attempts}, the last with {failure}"
