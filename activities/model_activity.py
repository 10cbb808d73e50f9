"""The activity that asks the model for the next assistant turn."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import providers
from activities.providers.base import ModelError
from contracts.activities import ModelContext, ModelRequest
from contracts.messages import AssistantTurn


@activity.defn(name="model_turn")
async def model_turn(request: ModelRequest) -> AssistantTurn:
    """Read the conversation from the workflow, call the agent's provider, return its normalised turn."""
    info = activity.info()
    handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    context = await handle.query("model_context", request, result_type=ModelContext)
    try:
        provider = providers.resolve(context.agent)
        return await provider.complete(context)
    except ModelError as err:
        raise ApplicationError(
            str(err),
            type=type(err).__name__,
            non_retryable=not err.retryable,
            next_retry_delay=timedelta(seconds=err.retry_after) if err.retry_after else None,
        ) from err
