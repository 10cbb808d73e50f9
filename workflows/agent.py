"""The agent loop as a Temporal workflow: run -> turn -> step.

A run works towards one goal, or, as a session, takes many messages. Each message's work is a turn: steps until an
answer, within the turn's budgets, a durable timer racing it for the wall-clock one. A step asks the model for the
next action (an activity), runs the tools it chose, and feeds their results back in the next step's request; a
step without tool calls gives the answer. A plain run is one turn; a session waits, at no cost, for the next
message after each turn. Long runs continue as new at safe points (between turns, or between two steps of a turn),
carrying their chain's state, so the chain reads as one run.

Everything else is a named part the workflow delegates to: the session inbox (`inbox.py`), the approval gate
(`approvals.py`), visibility (`visibility.py`), the chain (`chain.py`), the model step (`model_step.py`) and tool
calls (`tool_calls.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import failure_types, names
    from stalwart.contracts.messages import Message
    from stalwart.contracts.model import build_contracts
    from stalwart.contracts.run import AgentResult, RunEvent, RunState, StopReason
    from stalwart.contracts.run_input import TurnInProgress, missing_goal
    from stalwart.workflows import approvals, arguments, conversation, deadlines, patches, policies, telemetry, turns
    from stalwart.workflows.approvals import ApprovalGate
    from stalwart.workflows.chain import Chain, ContinueAsNew
    from stalwart.workflows.failures import innermost_message
    from stalwart.workflows.finalize import stop_on_budget
    from stalwart.workflows.inbox import Inbox, message_text
    from stalwart.workflows.interactions import name_the_routes
    from stalwart.workflows.model_step import ModelFailed, ModelStep, truncated
    from stalwart.workflows.tool_calls import ToolCalls
    from stalwart.workflows.turns import Turn
    from stalwart.workflows.typed_output import settle_output, why_no_output
    from stalwart.workflows.visibility import Visibility, listed_waiting_while_open


# Outside the SDK's sandbox. The sandbox re-imports a workflow's modules per run and watches their calls, but
# the worker already shares these modules across runs (workers/plugin.py SHARED_MODULES), so it watched nothing
# of ours but a few builtins such as `open`. What it still cost was running each activation through it, and an
# `exec` inside it for every payload of every workflow task (the SDK looks up each payload's serialization
# context there): a sixth of a step's time (bench/step_cost.py). tests/test_layers.py checks instead that
# workflow code imports only the contracts and the SDK and calls no clock, randomness or I/O. A user's own
# workflows on the same worker stay sandboxed.
@workflow.defn(name=names.WORKFLOW_TYPE, sandboxed=False)
class AgentWorkflow:
    """One run of one agent: a goal, or (with `session`) a conversation of many messages."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass is sandboxed unless it says otherwise: its contracts must be built before it runs there. Not
        # when the sandbox imports the subclass's module again: there a contract from a module it never imported (a
        # user's subclass of a public contract, defined after this one) fails to build, and the worker refuses the
        # workflow. Those the workflow uses were built when the subclass was first defined, outside.
        super().__init_subclass__(**kwargs)
        if not workflow.unsafe.in_sandbox():
            build_contracts()

    @workflow.init
    @arguments.one_input
    def __init__(self, raw_input: RawValue = arguments.NO_INPUT) -> None:
        self._input, self._invalid = arguments.run_input(raw_input)  # decoded here, so a bad one fails the run at once
        self._agent = self._input.agent
        self._chain = Chain(self._input, workflow.now())
        self._approvals = ApprovalGate(self._agent, on_change=lambda waits: self._visibility.approvals_changed(waits))
        self._visibility: Visibility = Visibility(
            self._input, self._chain, awaiting_approval=lambda: bool(self._approvals.pending)
        )
        self._inbox = Inbox(self._input, self._chain, self._visibility)
        self._model = ModelStep(self._agent, self._chain, self._visibility)
        self._tool_calls = ToolCalls(self._input, self._chain, self._approvals)
        self._error: str | None = None
        self._budget_fired_at: datetime | None = None
        name_the_routes()  # the UI lists the dynamic handlers' routes by name

    # -- the run ---------------------------------------------------------------

    @workflow.run
    @arguments.one_input
    async def run(self, raw_input: RawValue = arguments.NO_INPUT) -> AgentResult:
        input = self._input
        if self._invalid is not None:
            raise ApplicationError(self._invalid, type=failure_types.INVALID_RUN_INPUT, non_retryable=True)
        if (missing := missing_goal(input.goal, session=input.session)) is not None:
            raise ApplicationError(missing, type=failure_types.INVALID_RUN_INPUT, non_retryable=True)
        if not self._chain.continued:  # once per chain: a run continued as new is the same run
            telemetry.run_started(self._agent.name, session=input.session)
        kind = "session" if input.session else "invoke_agent"
        conversation_id = workflow.info().workflow_id if input.session else None
        attributes = telemetry.agent_attributes(self._agent.name, self._agent.model, conversation_id=conversation_id)
        with telemetry.span(f"{kind} {self._agent.name}", attributes) as span:
            result = await self._run_to_the_end()
            usage = result.usage
            span.set_attributes(
                telemetry.outcome_attributes(
                    result.stop_reason, self._chain.state.step, usage.input_tokens, usage.output_tokens, usage.cost_usd
                )
            )
        telemetry.run_finished(self._agent.name, result.stop_reason, session=input.session)
        return result

    async def _run_to_the_end(self) -> AgentResult:
        """The run, or the session, until it stops or continues as new (which raises out of here)."""
        state = self._chain.state
        self._visibility.publish()
        try:
            if state.tools is None:
                try:
                    state.tools = await self._tool_calls.describe()
                except ActivityError as err:
                    self._error = innermost_message(err)
                    return self._finish("error")
                unknown = self._tool_calls.unknown_names()
                # Asked only when a name is wrong, so other histories gain no marker; runs recorded before went on.
                if unknown is not None and patches.active(patches.UNKNOWN_TOOL_NAMES_END_THE_RUN):
                    self._error = unknown
                    return self._finish("error")
            stop = await (self._session() if self._input.session else self._one_goal())
        except ContinueAsNew:
            # Raised only with no `send` waiting and the steps archived, so this wait does not yield.
            await workflow.wait_condition(workflow.all_handlers_finished)
            # The next run starts on the deployment's current version (worker versioning), even when this
            # one is pinned to an older one: long runs and sessions move to new code between runs.
            workflow.continue_as_new(
                self._input.model_copy(update={"carried": self._chain.carried()}),
                initial_versioning_behavior=workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE,
            )
        except asyncio.CancelledError:
            self._chain.close_open_steps("cancelled")
            stop = "cancelled"
        self._inbox.answering = False
        if self._input.session:  # answer every `send` still waiting before the session ends
            self._inbox.answer_the_rest(stop)
            await workflow.wait_condition(workflow.all_handlers_finished)
        if (
            stop != "cancelled"
            and conversation.step_text_chars(self._chain.steps) > policies.RESULT_STEPS_INLINE_CHARS
            and patches.active(patches.ARCHIVE_LARGE_STEP_LOG)  # runs recorded before this end as they did
        ):
            try:
                await self._chain.archive_steps("of the result")
            except ActivityError as err:  # storage is down: the result keeps its steps rather than the run failing
                workflow.logger.warning("keeping the steps in the result: %s", innermost_message(err))
        return self._finish(stop)

    async def _one_goal(self) -> StopReason:
        """A plain run: one turn towards the goal (perhaps continued from an earlier run of the chain)."""
        progress = self._chain.state.turn or turns.begin(self._chain.state, self._agent, len(self._chain.steps))
        return await self._run_turn(progress)

    async def _session(self) -> StopReason:
        """Answer each message as one turn, then wait for the next; `close` or the idle timeout ends it."""
        state = self._chain.state
        if state.turn is not None:
            await self._run_turn(state.turn)
        idle = self._agent.session.idle_timeout_seconds
        while True:
            self._visibility.status = "waiting"
            self._visibility.publish()
            if not state.queued and not state.closing and (self._chain.due(self._agent) or self._chain.outdated()):
                self._inbox.continuing = True  # from here `send` is refused as retryable: the next run takes it
                await self._chain.archive_steps()
                await workflow.wait_condition(workflow.all_handlers_finished)
                raise ContinueAsNew()
            try:
                await self._inbox.next_message(idle)
            except TimeoutError:
                return "idle"
            if not state.queued:
                return "closed"
            await self._run_turn(turns.begin(state, self._agent, len(self._chain.steps)))

    # -- a turn ----------------------------------------------------------------

    async def _run_turn(self, progress: TurnInProgress) -> StopReason:
        """One turn within its wall-clock budget; its result goes to the `send` updates it answered."""
        state, agent = self._chain.state, self._agent
        turn = Turn.resumed(progress, agent, state.usage)
        turn_span = telemetry.turn_span(
            agent.name, agent.model, progress.number, session=self._input.session, ends_on=(ContinueAsNew,)
        )
        with turn_span as span:
            state.turn = progress
            self._visibility.status = "running"
            if self._input.session and (
                listed_waiting_while_open() or patches.active(patches.SESSION_RUNNING_AT_TURN_START)
            ):
                # The UI's current details say `running` from the message on. Sessions recorded between the two
                # patches also listed `running` from here; those recorded before either published it only after
                # the turn's first model call. A session recorded since records neither this marker nor its upsert.
                self._visibility.publish()
            self._error = None
            self._inbox.spending = turn.budget
            max_seconds = agent.budgets.max_seconds
            try:
                stop = await deadlines.before(
                    deadlines.timer_end(progress.deadline, state.deadline),
                    self._turn_steps(turn),
                    summary=f"budget max_seconds={max_seconds}",
                )
            except deadlines.DeadlineReached as cut:
                why = deadlines.reached(max_seconds, progress.deadline, state.deadline)
                self._chain.close_open_steps(why)
                # A failure for good that came after the timer fired (the work's own, or a model call it stopped on)
                # is named after the retried calls, not in their place.
                self._error = deadlines.cut_short(why, cut.retried, cut.failed or self._error) or self._error
                stop = "max_seconds"
                self._budget_fired_at = progress.deadline  # later than now only if no worker ran at the deadline
            self._error = why_no_output(agent, state, progress, stop, self._error)  # typed output a budget cut
            conversation.keep_budget_answer(self._chain.steps, stop, state.answer)  # the turn's agent_response
            state.turn = None
            self._inbox.answer_turn(turn.result(stop, state.answer or "", self._error, self._chain.steps))
            spent = turn.budget.spent
            span.set_attributes(
                telemetry.outcome_attributes(
                    stop, turn.budget.steps_taken, spent.input_tokens, spent.output_tokens, spent.cost_usd
                )
            )
            return stop

    async def _turn_steps(self, turn: Turn) -> StopReason:
        """Steps until the turn has its answer, or a budget or a failed model call stops it."""
        try:
            while True:
                if not self._inbox.left_for_the_next_turn(turn.budget):
                    self._inbox.read_into_turn()
                if not self._inbox.waiters and self._chain.due(self._agent):
                    self._inbox.continuing = True  # from here `send` is refused as retryable: the next run takes it
                    await self._chain.archive_steps()
                    turn.hold_for_the_next_run()
                    raise ContinueAsNew()
                exhausted = turn.budget.exhausted()
                if exhausted is not None:  # perhaps after one last call for an answer (`finalize_on_budget`)
                    self._error = await stop_on_budget(self._agent, self._chain, self._model, turn, exhausted)
                    return exhausted
                stop = await self._step(turn)
                if stop is not None:
                    return stop
        except ModelFailed as failed:
            self._error = str(failed)
            return failed.stop_reason

    # -- a step ----------------------------------------------------------------

    async def _step(self, turn: Turn) -> StopReason | None:
        """Ask the model, then run the tools it chose (their results go back in the next step's request).

        None while the turn goes on; the stop reason once the model has answered."""
        state = self._chain.state
        if state.tools and conversation.reminder_due(state.step, self._agent.loop):
            state.unsent.append(Message(role="user", content=conversation.tool_reminder(state.tools)))
        # Tools on even when the agent has none: a text protocol still reads the reply for an action
        # (no action, then one more call for the final response); providers offer no tools.
        reply = await self._model.ask(turn, tools_enabled=True)
        if reply.truncated:
            self._error = truncated(self._agent, state, reply)
            return "max_tokens"
        if reply.feedback is not None:  # a malformed action (text protocols): the model is told, and its step says so
            self._chain.steps[-1].error = conversation.MALFORMED_ACTION.format(feedback=reply.feedback)
            state.unsent.append(Message(role="user", content=reply.feedback))
            return None
        if reply.wants_final_answer:
            state.unsent.append(Message(role="user", content=conversation.FINAL_RESPONSE_PROMPT))
            reply = await self._model.ask(turn, tools_enabled=False)
            if reply.truncated:
                self._error = truncated(self._agent, state, reply)
                return "max_tokens"
        if reply.tool_calls:
            await self._tool_calls.run(reply.tool_calls, turn)
            return None
        if state.queued:  # a message came during the step: the model reads it before the turn ends
            return None
        if turn.nudged(self._agent, bool(state.tools), reply.text):
            state.unsent.append(Message(role="user", content=self._agent.loop.persistence_prompt))
            return None
        if self._agent.output is not None:  # typed output
            stop, self._error = settle_output(self._agent, self._chain, turn, reply.text)
            return stop
        state.answer = reply.text
        self._chain.steps[-1].final = True
        return "done"

    def _finish(self, stop: StopReason) -> AgentResult:
        self._visibility.status = stop
        if self._chain.state.answer is None:
            self._chain.state.answer = ""
        self._visibility.publish()
        return self._chain.result(stop, self._error, self._budget_fired_at)

    # -- queries, signals and updates -----------------------------------------
    # Dynamic handlers, routed by name (`arguments.SIGNALS`, `UPDATES`, `QUERIES`): the SDK hands a dynamic handler
    # whatever came, undecoded and however many. A handler with a signature is given arguments decoded by it: one
    # argument too many failed every workflow task of the session, and one that did not decode was dropped unseen.
    # A bad update is refused by the validator (no history event); a signal the run cannot use becomes a note.

    @workflow.query(dynamic=True, description="state, pending_approvals, events: arguments are ignored")
    def _query(self, name: str, args: Sequence[RawValue]) -> Any:
        if name == "state":
            return self.state()
        if name == "pending_approvals":  # tool calls waiting for a person's decision, with their arguments
            return list(self._approvals.pending.values())
        if name == "events":
            return self.events()
        raise arguments.unknown("query", name, arguments.QUERIES)

    @workflow.signal(dynamic=True, description="message (the text, without waiting), close")
    def _signal(self, name: str, args: Sequence[RawValue]) -> None:
        try:
            if name == "message":
                self.message(message_text("message", args))
            elif name == "close":  # arguments or not: the sender wants the session closed
                self._inbox.close()
            else:
                raise arguments.unknown("signal", name, arguments.SIGNALS)
        except ApplicationError as err:  # a signal has no answer: its sender is told nothing, the session shows it
            note = f"{arguments.printable(name[:60])} signal ignored: {err.message}"[: arguments.NOTE_CHARS]
            workflow.logger.warning("%s", note)
            self._visibility.note(note)

    @workflow.update(dynamic=True, description="send (the text; answers the turn's result), approve, reject, close")
    async def _update(self, name: str, args: Sequence[RawValue]) -> Any:
        if name == "send":
            return await self.send(message_text("send", args))
        if name in ("approve", "reject"):
            decision = approvals.decision(name, arguments.only(args, handler=name, takes=arguments.DECISION_SHAPE))
            self._approvals.decide(name == "approve", decision)  # the model reads a refusal as the call's result
            return f"{'approved' if name == 'approve' else 'rejected'} {decision.call_id}"
        self._inbox.close()  # `close`: the validator lets no other name through
        return f"session {workflow.info().workflow_id} is closing"

    @_update.validator
    def _validate_update(self, name: str, args: Sequence[RawValue]) -> None:
        if name == "send":
            self._inbox.check_send(message_text("send", args))
        elif name in ("approve", "reject"):
            raw = arguments.only(args, handler=name, takes=arguments.DECISION_SHAPE)
            self._approvals.require_pending(approvals.decision(name, raw))
        elif name != "close":
            raise arguments.unknown("update", name, arguments.UPDATES)
        else:
            self._inbox.check_close()

    def state(self) -> RunState:
        """The live step log, status and usage of the run (of the whole chain, across continue-as-new)."""
        state = self._chain.state
        return RunState(
            agent=self._agent.name,
            goal=self._input.goal,
            status=self._visibility.status,
            steps=self._chain.steps,
            usage=state.usage,
            answer=state.answer,
            output=state.output,
            error=self._error,
            session=self._input.session,
            turns=state.turns,
            queued=len(state.queued),
            runs=state.runs + 1,
            earlier=state.archives,
            waiting=self._visibility.waiting,
            notes=self._visibility.notes,
        )

    def events(self) -> list[RunEvent]:
        """The run so far as memory events (docs/concepts.md), then the notes of what it could not use."""
        first_index = sum(archive.count for archive in self._chain.state.archives)
        notes = [note.as_event() for note in self._visibility.notes]
        status, answer = self._visibility.status, self._chain.state.answer  # a budget's answer ends them too
        return conversation.events(self._chain.steps, first_index=first_index, status=status, answer=answer) + notes

    async def send(self, text: str) -> AgentResult:
        """Give the session a message; returns when the turn that read it ends, with that turn's result."""
        update = workflow.current_update_info()
        message_id = update.id if update is not None else str(workflow.uuid4())
        self._inbox.enqueue(message_id, text)
        return await self._inbox.answer_to(message_id)

    def message(self, text: str) -> None:
        """Give the run a message without waiting; the model reads it at its next step."""
        problem = self._inbox.refusal(text, signalled=True)
        if problem is not None:
            raise ApplicationError(problem)
        self._inbox.enqueue(f"signal-{workflow.uuid4()}", text)
