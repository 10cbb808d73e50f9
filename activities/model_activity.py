"""The activity that asks the model for the next assistant turn.

The answer streams out as heartbeat details (`activities/streaming.py`);
the turn's usage is priced here, on the worker, from the price table. The
provider SDK clients belong to the worker, so turns reuse their connections.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from stalwart.activities import pricing, protocols, providers
from stalwart.activities.providers.base import ModelError
from stalwart.activities.providers.buffered import as_streaming
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.streaming import AnswerPublisher, keepalive
from stalwart.contracts.activities import ModelContext, ModelRequest
from stalwart.contracts.messages import AssistantTurn
from stalwart.contracts.names import MODEL_ACTIVITY


class ModelActivities:
    """The model activity with the SDK clients one worker keeps for it."""

    def __init__(self) -> None:
        self.clients = SdkClients()

    @activity.defn(name=MODEL_ACTIVITY)
    async def model_turn(self, request: ModelRequest) -> AssistantTurn:
        """Read the conversation from the workflow, call the agent's provider, return its normalised turn.

        Retryable failures (rate limits, overload, broken streams) are logged in
        one line and raised as BENIGN, so expected retries do not print a
        traceback per attempt; Temporal waits `Retry-After` when the provider gave one.
        """
        info = activity.info()
        if info.workflow_id is None:
            raise ApplicationError(
                "model_turn runs only as an activity of an AgentWorkflow", type="ModelConfigError", non_retryable=True
            )
        handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
        context = await handle.query("model_context", request, result_type=ModelContext)
        context = context.model_copy(update={"agent": providers.effective(context.agent)})
        publisher = AnswerPublisher(request.step, activity.heartbeat)
        try:
            price = pricing.price_for(context.agent)
            provider = protocols.wrap(
                as_streaming(providers.resolve(context.agent, self.clients)), context.agent.action_format
            )
            async with keepalive(publisher):
                turn: AssistantTurn = await provider.complete(context, publisher)
            publisher.flush_if_shown_differs()
            return turn.model_copy(update={"usage": pricing.with_cost(turn.usage, price)})
        except ModelError as err:
            if err.retryable:
                activity.logger.warning("model call attempt %d failed, Temporal retries it: %s", info.attempt, err)
            raise ApplicationError(
                str(err),
                type=type(err).__name__,
                non_retryable=not err.retryable,
                next_retry_delay=timedelta(seconds=err.retry_after) if err.retry_after else None,
                category=ApplicationErrorCategory.BENIGN if err.retryable else ApplicationErrorCategory.UNSPECIFIED,
            ) from err
