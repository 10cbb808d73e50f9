"""Activities through which a user's workflow reaches an agent run the way only a client can.

A workflow awaits only the children its own run started, and sends no update: after it continues as new, the
agent it started is awaited here (`stalwart.workflow.get_agent`), and a session's turn is sent here as the `send`
update, which answers with that turn's result (`AgentHandle.send`). Both wait as long as the run takes,
heartbeating, so a worker that dies is noticed and the wait moves to another.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from stalwart.activities.heartbeats import heartbeating
from stalwart.contracts import failure_types, names
from stalwart.contracts.run import AgentResult
from stalwart.contracts.send_result import SendResult
from stalwart.workflows.failures import innermost_message

HEARTBEAT_SECONDS = 10.0


@activity.defn(name=names.AGENT_RESULT_ACTIVITY)
async def agent_result(run_id: str) -> AgentResult:
    """Wait for the agent run `run_id` (following its continue-as-new chain) to end, and return its result."""
    handle = activity.client().get_workflow_handle(run_id, result_type=AgentResult)
    try:
        async with heartbeating(HEARTBEAT_SECONDS, activity.heartbeat):
            return await handle.result()
    except WorkflowFailureError as err:
        raise ApplicationError(
            f"agent run {run_id} failed: {innermost_message(err)}", type="AgentRunFailed", non_retryable=True
        ) from err


@activity.defn(name=names.AGENT_SEND_ACTIVITY)
async def agent_send(session_id: str, text: str, update_id: str) -> AgentResult:
    """Send `text` to the session `session_id` and return the result of the turn that answers it.

    `update_id` is fixed by the workflow, so a retried attempt is the same update and the message arrives once. A
    session continuing as new refuses the message for a moment: that attempt fails and Temporal retries it."""
    handle = activity.client().get_workflow_handle(session_id, result_type=AgentResult)
    try:
        async with heartbeating(HEARTBEAT_SECONDS, activity.heartbeat):
            sent = await handle.execute_update("send", text, id=update_id, result_type=SendResult)
            return sent.restored(text)
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == failure_types.SESSION_CONTINUING:
            raise  # retried: the next run of the session takes it
        raise ApplicationError(
            f"session {session_id} refused the message: {innermost_message(err)}",
            type="AgentMessageRefused",
            non_retryable=True,
        ) from err
