"""The model step: ask the model for the next action, as an activity, and record its reply.

Only what the model has not yet read goes in the request (the conversation itself is in storage, named by the
chain's transcript). A conversation that overflows its window under the `summarize` strategy is summarised by a
step of its own, then asked again; a provider's long rate limit is waited out on a durable timer, within limits.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.activities import AgentContext, ModelRequest
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import AssistantTurn, Message, ToolResult, Usage
    from stalwart.contracts.run import StepRecord, StopReason
    from stalwart.contracts.run_input import ChainState
    from stalwart.workflows import deadlines, patches, policies
    from stalwart.workflows.budget import Budget
    from stalwart.workflows.chain import Chain
    from stalwart.workflows.failures import long_rate_limit, message_unless_cancelled
    from stalwart.workflows.turns import Turn
    from stalwart.workflows.visibility import Visibility


def failed_attempts_usage(err: ActivityError) -> Usage | None:
    """What the attempts of a model call that failed for good spent, as its activity put it in the failure's
    details (the tokens a provider reported before an attempt failed are billed); None when it names none."""
    cause = err.cause
    if not isinstance(cause, ApplicationError) or not cause.details:
        return None
    try:
        spent = Usage.model_validate(cause.details[0])
    except ValueError:  # not a usage: details of another kind of failure
        return None
    return spent if spent.total_tokens else None


class ModelFailed(Exception):
    """The model activity failed for good; the turn ends with stop reason `stop_reason` (`error`), and this message.

    A call whose retries the wall-clock budget cut short (the server starts no attempt past the schedule-to-close
    timeout, which is capped at the run's deadline) stops the turn with `max_seconds` instead: the budget ended it,
    and the message says how every attempt failed. No finalize-on-budget call follows: the time is spent, and the
    provider answered none of the attempts."""

    def __init__(self, message: str, stop_reason: StopReason = "error") -> None:
        super().__init__(message)
        self.stop_reason: StopReason = stop_reason


def not_run(state: ChainState, reply: AssistantTurn, why: str) -> None:
    """Answer the tool calls of a reply that the turn does not run, saying `why`: a session's next turn sends the
    conversation on, and providers refuse a tool call without its result."""
    if reply.tool_calls:
        results = [ToolResult(call_id=call.id, name=call.name, error=f"not run: {why}") for call in reply.tool_calls]
        state.unsent.append(Message(role="tool", tool_results=results))


def truncated(agent: AgentSpec, state: ChainState, reply: AssistantTurn) -> str:
    """Why a reply cut off by the output-token limit is no answer: the run stops with `max_tokens`, as the Strands
    loop does; the cut-off text stays in the step log and its tool calls (likely cut off too) are not run, each
    answered so (`not_run`)."""
    not_run(state, reply, "the reply was cut off by the output-token limit")
    limit, step = agent.max_output_tokens, state.step
    return (
        f"the model's reply at step {step} was cut off by its output-token limit "
        f"(stop reason {reply.stop_reason!r}; max_output_tokens = {limit if limit else 'the provider default'}), "
        f"so the run stops instead of taking it as the answer. Raise `max_output_tokens` in the agent file, "
        f"or ask for a shorter answer."
    )


class ModelStep:
    """Asks the model, for the turn given, and writes the step, its usage and the conversation's state."""

    def __init__(self, agent: AgentSpec, chain: Chain, visibility: Visibility) -> None:
        self._agent = agent
        self._chain = chain
        self._visibility = visibility

    async def ask(self, turn: Turn, *, tools_enabled: bool) -> AssistantTurn:
        """The model's reply to what it has not read yet; raises `ModelFailed` when the call fails for good."""
        state, budget = self._chain.state, turn.budget
        assert state.tools is not None, "tools are described before the first turn"
        state.step += 1
        budget.steps_taken += 1
        record = StepRecord(step=state.step, role="assistant", started_at=workflow.now())
        record_index = len(self._chain.steps)
        self._chain.steps.append(record)
        unsent = state.unsent
        new_messages, sent = self._chain.by_reference(unsent)
        if not sent or not patches.active(patches.SENT_MESSAGES_BY_REFERENCE):  # runs recorded before sent the texts
            new_messages, sent = unsent, {}
        request = ModelRequest(
            step=state.step,
            transcript=state.transcript,
            new_messages=new_messages,
            context=None if state.context_ref else AgentContext(agent=self._agent, tools=state.tools),
            context_ref=state.context_ref,
            tools_enabled=tools_enabled,
            deadline=budget.deadline,
            may_defer=True,
            # A session's answer is stored by its own call: deferred, the next turn's request would carry it again.
            store_answer=self._chain.session and patches.active(patches.SESSION_ANSWERS_STORED_BY_THEIR_CALL),
            sent=sent,
        )
        waits = 0
        while True:
            scheduled_at = workflow.now()
            try:
                reply = await deadlines.execute_activity(
                    names.MODEL_ACTIVITY,
                    request,
                    result_type=AssistantTurn,
                    deadline=request.deadline,
                    start_to_close=policies.MODEL_START_TO_CLOSE,
                    schedule_to_close=policies.MODEL_SCHEDULE_TO_CLOSE,
                    heartbeat_timeout=policies.MODEL_HEARTBEAT,
                    retry_policy=policies.MODEL_RETRY,
                    summary=f"model {self._agent.model} · step {state.step}",
                )
                if reply.needs_summary and not request.summarize:
                    # Context strategy `summarize`: the conversation overflows its window. This step's model call
                    # writes a summary of the older messages instead (an activity of its own, so the summary is in
                    # history); the next step asks for the reply again, on the shorter conversation.
                    state.transcript = reply.transcript or state.transcript
                    state.context_ref = reply.context_ref or state.context_ref
                    state.unsent = unsent = []
                    update: dict[str, Any] = {"summarize": True, "transcript": state.transcript, "context": None}
                    request = request.model_copy(
                        update={**update, "new_messages": [], "context_ref": state.context_ref, "sent": {}}
                    )
                    continue
                break
            except ActivityError as err:
                limited = long_rate_limit(err)
                refusal = None if limited is None else self._rate_limit_refusal(*limited, budget, waits=waits)
                if limited is not None and refusal is None:
                    waits += 1
                    seconds, provider = limited
                    until = workflow.now() + timedelta(seconds=seconds)
                    waiting = f"rate limited by {provider}: waiting {seconds:g} s"
                    self._visibility.waiting_out(f"{waiting}, until {until:%Y-%m-%d %H:%M:%S} UTC")
                    await workflow.sleep(seconds, summary=waiting)
                    self._visibility.waiting_out(None)
                    continue
                record.error = refusal or message_unless_cancelled(err)
                record.ended_at = workflow.now()
                spent = None if limited is not None else failed_attempts_usage(err)
                if spent is not None:  # billed by the provider though the call failed: the run counts it
                    record.usage = spent
                    budget.charge(spent)
                    state.usage = state.usage + spent
                if refusal is None and self._cut_short_by_the_deadline(err, request.deadline, scheduled_at):
                    limit = self._agent.budgets.max_seconds
                    which = "inherited" if limit is None else f"max_seconds={limit:g}"
                    raise ModelFailed(
                        f"model call at step {state.step} failed every attempt within the wall-clock budget "
                        f"({which}): {record.error}",
                        "max_seconds",
                    ) from err
                raise ModelFailed(f"model call at step {state.step} failed: {record.error}") from err
        if request.summarize:
            return await self._after_summary(record, reply, turn, tools_enabled=tools_enabled)
        if reply.text:  # its message follows the request's in the conversation, stored now or by a later call
            self._chain.positions[record_index] = request.transcript.messages + len(request.new_messages)
        record.content = reply.text
        record.usage = reply.usage
        record.stop_reason = reply.stop_reason
        record.ended_at = workflow.now()
        budget.charge(reply.usage)
        state.usage = state.usage + reply.usage
        if reply.transcript is not None:
            state.transcript = reply.transcript
        state.context_ref = reply.context_ref or state.context_ref
        if reply.deferred:  # nothing stored: the next request carries what this one did, and the answer
            state.unsent = [*unsent, reply.as_message()]  # the texts themselves, named again by the next request
        else:
            state.unsent = [] if reply.recorded else [reply.as_message()]
        self._visibility.publish()
        return reply

    async def _after_summary(
        self, record: StepRecord, summary: AssistantTurn, turn: Turn, *, tools_enabled: bool
    ) -> AssistantTurn:
        """Record the summary step (not one of `max_steps`, its tokens charged), then make the model call it made
        room for."""
        state = self._chain.state
        record.content, record.usage, record.summary = summary.text, summary.usage, True
        record.ended_at = workflow.now()
        turn.budget.charge(summary.usage)
        state.usage = state.usage + summary.usage
        turn.budget.steps_taken -= 1
        state.transcript = summary.transcript or state.transcript
        self._visibility.publish()
        return await self.ask(turn, tools_enabled=tools_enabled)

    @staticmethod
    def _cut_short_by_the_deadline(err: ActivityError, deadline: datetime | None, scheduled_at: datetime) -> bool:
        """Whether the call's retries ran out of time because its schedule-to-close timeout was cut to the deadline
        (not the model policy's own `MODEL_SCHEDULE_TO_CLOSE`)."""
        return err.retry_state == RetryState.TIMEOUT and deadlines.cuts(
            deadline, policies.MODEL_SCHEDULE_TO_CLOSE, scheduled_at
        )

    def _rate_limit_refusal(self, seconds: float, provider: str, budget: Budget, *, waits: int) -> str | None:
        """Why the run does not wait out a long Retry-After; None when it may (on a durable timer)."""
        asked = f"rate limited by {provider}, which asked to wait {seconds:g} s before the next request"
        if waits >= policies.RATE_LIMIT_MAX_WAITS:
            return (
                f"{asked}, after {waits} such waits at this step; stopped. Run again later, or check the "
                "account's limits."
            )
        if seconds > policies.RATE_LIMIT_MAX_WAIT.total_seconds():
            return (
                f"{asked}, longer than the {policies.RATE_LIMIT_MAX_WAIT.total_seconds():g} s a run waits; stopped. "
                "Run again later, or check the account's limits."
            )
        left = budget.remaining_seconds(workflow.now())
        if left is not None and seconds >= left:
            max_seconds = self._agent.budgets.max_seconds
            limit = "inherited" if max_seconds is None else f"max_seconds={max_seconds:g}"
            return (
                f"{asked}, but only {left:.0f} s of this run's wall-clock budget "
                f"({limit}) is left; stopped instead of waiting. "
                "Raise max_seconds to let runs wait out rate limits, or run again later."
            )
        return None
