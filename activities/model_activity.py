"""The activity that asks the model for the next assistant turn.

The answer streams out as heartbeat details (`activities/streaming.py`);
the turn's usage is priced here, on the worker, from the price table. The
provider SDK clients belong to the worker, so turns reuse their connections.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from stalwart.activities import pricing, protocols, providers, telemetry
from stalwart.activities import usage as token_usage
from stalwart.activities.budget_guard import refuse_after
from stalwart.activities.call_records import CallRecords
from stalwart.activities.context_window import model_window, overflows, summary_context
from stalwart.activities.in_flight import InFlight
from stalwart.activities.providers.base import ModelError, ModelGarbledError
from stalwart.activities.providers.buffered import as_streaming
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.sent_messages import SentMessages
from stalwart.activities.storage.config import ObjectStore
from stalwart.activities.streaming import AnswerPublisher, keepalive
from stalwart.activities.transcripts import TranscriptError, TranscriptStore
from stalwart.contracts import failure_types
from stalwart.contracts.activities import LONG_RATE_LIMIT, ModelContext, ModelRequest
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import AssistantTurn, Message, Usage
from stalwart.contracts.names import ARCHIVE_STEPS_ACTIVITY, MODEL_ACTIVITY
from stalwart.contracts.run import ArchivedStep, ArchiveStepsRequest, StepArchive

FINISHED_TURNS_KEPT = 256
LONG_RETRY_AFTER_SECONDS = 60.0
"""A Retry-After up to this is waited out by Temporal's activity retry; a longer one goes back to the workflow,
which waits on a durable timer (visible in the UI, no worker slot held) if the run's budget allows."""


class ModelActivities:
    """The model activity with what one worker keeps for it: SDK clients and the transcript store."""

    def __init__(self, transcripts: TranscriptStore | None = None) -> None:
        self.clients = SdkClients()
        self._transcripts = transcripts
        self._finished: OrderedDict[tuple[str | None, str], AssistantTurn] = OrderedDict()
        """Turns this worker finished, by (run id, activity id): a completion lost to a server outage (the SDK
        stops retrying it after about 10 s) brings the call back as a new attempt, answered from here."""
        self._failed: OrderedDict[tuple[str | None, str], Usage] = OrderedDict()
        """What failed attempts of a call spent, by (run id, activity id): the tokens the provider reported before
        the attempt failed were billed, so the attempt that succeeds counts them in its turn's usage."""
        self._in_flight: InFlight[AssistantTurn] = InFlight(CallRecords(AssistantTurn))
        """Calls running here: a new attempt of one (the server timed out the last during an outage) joins it, here
        or, through their records in storage, on another worker."""
        self._sent = SentMessages()
        """Messages that came by `send`, read back from history (`ModelRequest.sent`)."""

    async def drain(self) -> None:
        """Wait for the outcome records of calls that ended (`InFlight.drain`): the worker is stopping."""
        await self._in_flight.drain()

    @property
    def transcripts(self) -> TranscriptStore:
        if self._transcripts is None:  # opened on first use: the storage settings are the worker's
            self._transcripts = TranscriptStore(ObjectStore.from_config())
        return self._transcripts

    @activity.defn(name=ARCHIVE_STEPS_ACTIVITY)
    async def archive_steps(self, request: ArchiveStepsRequest) -> StepArchive:
        """Keep a run's step log in storage when it continues as new, instead of carrying it forward.

        The texts the stored conversation holds come from there (`ArchiveStepsRequest.from_transcript`)."""
        steps: list[ArchivedStep] = request.steps
        if request.from_transcript:
            try:
                steps = await self.transcripts.steps_filled(request.transcript, request.steps, request.from_transcript)
            except TranscriptError as err:
                raise ApplicationError(str(err), type=failure_types.TRANSCRIPT_ERROR, non_retryable=True) from err
        return await self.transcripts.save_steps(request.chain_id, request.index, steps)

    @activity.defn(name=MODEL_ACTIVITY)
    async def model_turn(self, request: ModelRequest) -> AssistantTurn:
        """Call the agent's provider on the stored conversation plus the new messages; store both with the answer.

        Retryable failures (rate limits, overload, broken streams) are logged in
        one line and raised as BENIGN, so expected retries do not print a
        traceback per attempt; Temporal waits `Retry-After` when the provider gave one.
        Each attempt is a `chat {model}` span when the worker traces, and is counted in its metrics.
        """
        info = activity.info()
        key = (info.workflow_run_id, info.activity_id)
        if info.attempt > 1 and key in self._finished:  # see `_finished`: no second request, no tokens spent twice
            activity.logger.info(
                "model call of step %d finished on this worker before, but its result did not reach the server; "
                "answering attempt %d with it instead of asking the model again",
                request.step,
                info.attempt,
            )
            return self._finished[key]
        what = f"the model call of step {request.step}"
        return await self._in_flight.run(key, lambda: self._asked_and_kept(request, key), what=what)

    async def _asked_and_kept(self, request: ModelRequest, key: tuple[str | None, str]) -> AssistantTurn:
        """Ask the model, and keep the turn here for a later attempt of the call."""
        with telemetry.model_call(request.step) as observed, token_usage.metered() as reported:
            turn = observed.turn(await self._model_turn(request, observed, reported))
        failed = self._failed.pop(key, None)
        if failed is not None:
            turn = turn.model_copy(update={"usage": turn.usage + failed})
        self._finished[key] = turn
        while len(self._finished) > FINISHED_TURNS_KEPT:
            self._finished.popitem(last=False)
        return turn

    async def _model_turn(
        self, request: ModelRequest, observed: telemetry.ModelCall, reported: list[Usage]
    ) -> AssistantTurn:
        info = activity.info()
        refuse_after(request.deadline, f"the model call of step {request.step}")
        try:
            context_ref = request.context_ref
            if request.context is not None:
                static = request.context
                context_ref = await self.transcripts.save_context(request.transcript.chain_id, static)
            elif context_ref is not None:
                static = await self.transcripts.load_context(request.transcript.chain_id, context_ref)
            else:
                raise TranscriptError("the model request names no agent: give `context` or `context_ref`")
            new = await self.transcripts.filled(
                request.transcript.chain_id, request.new_messages
            )  # large tool results come by reference
            if request.sent:  # messages that came by `send` come by reference too: their update is in history
                new = await self._sent.filled(
                    activity.client(),
                    info.workflow_namespace or "",
                    info.workflow_id or "",
                    info.workflow_run_id or "",
                    new,
                    request.sent,
                )
            messages = [*await self.transcripts.read(request.transcript), *new]
        except TranscriptError as err:
            raise ApplicationError(str(err), type=failure_types.TRANSCRIPT_ERROR, non_retryable=True) from err
        agent = providers.effective(static.agent)
        observed.agent(agent)
        context = ModelContext(
            agent=agent,
            step=request.step,
            tools=static.tools,
            messages=model_window(messages, agent, request.transcript),
            tools_enabled=request.tools_enabled,
        )
        try:
            price = pricing.price_for(context.agent)
            if request.summarize or overflows(messages, agent, request.transcript):
                return await self._summary(request, agent, messages, new, context_ref, price)
            provider = protocols.wrap(
                as_streaming(providers.resolve(context.agent, self.clients)), context.agent.action_format
            )
            publisher = AnswerPublisher(request.step, activity.heartbeat, hold=protocols.may_act(provider, context))
            async with keepalive(publisher):
                turn: AssistantTurn = await provider.complete(context, publisher)
            # Nothing is published once the turn is over: its text goes back with this activity's result, which
            # `stream()` reads from the step log a poll later; a heartbeat now would cost the server a write for
            # text the completion carries anyway.
            turn = turn.model_copy(
                update={
                    "usage": pricing.with_cost(token_usage.settle(turn.usage, context, turn), price),
                    "context_ref": context_ref,
                    "recorded": True,
                }
            )
            # The agent's hash goes back only when it is new to the workflow (the first call), not with every turn.
            known = context_ref if context_ref != request.context_ref else None
            if (
                request.may_defer
                and not _carries_an_answer(request)
                and not (request.store_answer and not turn.tool_calls)
            ):
                # Nothing is written now: the next request carries the new messages and this answer, and its call
                # stores them with its own answer (`AssistantTurn.deferred`). So a durable write serves two calls,
                # and a message travels in two requests at most. A session's answer is stored now (`store_answer`):
                # the next request would be the next turn's, and would carry it through history a second time.
                update = {"transcript": request.transcript, "context_ref": known, "recorded": False, "deferred": True}
                return turn.model_copy(update=update)
            # The new messages (with any deferred call's) and this answer are stored together, once: the workflow
            # sends none of them again.
            transcript, _ = await self.transcripts.append(
                request.transcript, [*new, turn.as_message()]
            )  # `new` is already filled in; the segment keeps its stored results as references
            self._sent.forget(info.workflow_run_id or "", request.sent.values())  # stored: no call names them again
            return turn.model_copy(update={"transcript": transcript, "context_ref": known})
        except ModelError as err:
            spent = self._spent_failing(
                info, pricing.with_cost(token_usage.of_failed_attempt(reported), pricing.price_of(agent.model))
            )
            details = [spent.model_dump(mode="json")] if spent.total_tokens else []  # for a call that fails for good
            if err.retryable and err.retry_after and _too_long_to_retry_here(err.retry_after, info, request):
                vendor = agent.model.split(":", 1)[0]
                raise ApplicationError(
                    f"{vendor} is rate limiting this run and asked to wait {err.retry_after:g}s before the next "
                    f"request ({err})",
                    err.retry_after,
                    vendor,
                    type=LONG_RATE_LIMIT,
                    non_retryable=True,
                    category=ApplicationErrorCategory.BENIGN,
                ) from None
            if isinstance(err, ModelGarbledError) and info.attempt >= err.MAX_ATTEMPTS:
                # Junk that came back this often is not a blip: stop instead of retrying for minutes.
                raise ApplicationError(
                    f"{err} Gave up after {info.attempt} attempts.",
                    *details,
                    type=type(err).__name__,
                    non_retryable=True,
                ) from None  # the run's error is the innermost message: this one, with the attempts
            if err.retryable:
                activity.logger.warning("model call attempt %d failed, Temporal retries it: %s", info.attempt, err)
            raise ApplicationError(
                str(err),
                *details,
                type=type(err).__name__,
                non_retryable=not err.retryable,
                next_retry_delay=timedelta(seconds=err.retry_after) if err.retry_after else None,
                category=ApplicationErrorCategory.BENIGN if err.retryable else ApplicationErrorCategory.UNSPECIFIED,
            ) from err

    def _spent_failing(self, info: activity.Info, attempt: Usage) -> Usage:
        """What the failed attempts of this call have spent, this one's `attempt` included."""
        key = (info.workflow_run_id, info.activity_id)
        spent = self._failed.pop(key, Usage()) + attempt
        self._failed[key] = spent
        while len(self._failed) > FINISHED_TURNS_KEPT:
            self._failed.popitem(last=False)
        return spent

    async def _summary(
        self,
        request: ModelRequest,
        agent: AgentSpec,
        messages: list[Message],
        new: list[Message],
        context_ref: str | None,
        price: pricing.Price | None,
    ) -> AssistantTurn:
        """Context strategy `summarize`: say that the conversation overflows (storing the request's new messages, no
        model called), or, asked to (`request.summarize`), have the model write the summary of its older messages."""
        if not request.summarize:
            transcript, _ = await self.transcripts.append(request.transcript, new)
            self._sent.forget(activity.info().workflow_run_id or "", request.sent.values())  # stored: named no more
            return AssistantTurn(needs_summary=True, transcript=transcript, context_ref=context_ref, recorded=True)
        context, after = summary_context(messages, agent, request.transcript, request.step)
        publisher = AnswerPublisher(request.step, activity.heartbeat, hold=True)  # a summary is never an answer
        async with keepalive(publisher):
            turn = await as_streaming(providers.resolve(agent, self.clients)).complete(context, publisher)
        return AssistantTurn(
            text=turn.text,
            usage=pricing.with_cost(token_usage.settle(turn.usage, context, turn), price),
            model=turn.model,
            transcript=after.model_copy(update={"summary": turn.text}),
            context_ref=context_ref,
            recorded=True,
        )


def _carries_an_answer(request: ModelRequest) -> bool:
    """Whether `request` carries a deferred call's answer: storing it now keeps every message to two requests."""
    return any(message.role == "assistant" for message in request.new_messages)


def _too_long_to_retry_here(wait: float, info: activity.Info, request: ModelRequest) -> bool:
    """Whether a retry `wait` seconds from now is beyond what the activity's own retry should absorb.

    It is when it is long, or when it would come after the activity's schedule-to-close
    timeout (Temporal would then give up with this attempt's message) or after the run's deadline.
    """
    if wait > LONG_RETRY_AFTER_SECONDS:
        return True
    retry_at = datetime.now(UTC) + timedelta(seconds=wait)
    if request.deadline is not None and retry_at >= request.deadline:
        return True
    timeout = info.schedule_to_close_timeout
    return bool(timeout) and retry_at >= info.scheduled_time + timeout  # type: ignore[operator]
