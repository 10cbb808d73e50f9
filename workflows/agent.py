"""The agent loop as a Temporal workflow: one run towards one goal, or a session that takes messages.

A turn checks its budget, asks the model for the next action (an activity), runs the tools
it chose (activities, at most `max_parallel_tools` at once, results fed back in call order),
and ends on a step without tool calls. A durable timer races each turn for the wall-clock
budget. A plain run is one turn; a session waits, at no cost, for the next message after
each turn. Long runs continue as new at safe points (between turns, or between two steps of
a turn), carrying everything the next run needs, so a chain reads as one run.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.activities import (
        AgentContext,
        DescribeToolsRequest,
        DescribeToolsResult,
        ModelRequest,
        ToolRequest,
    )
    from stalwart.contracts.agent import AgentSpec, unknown_tool_names
    from stalwart.contracts.approvals import ApprovalDecision, PendingApproval, decision_problem
    from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, ToolResult, TranscriptRef, Usage
    from stalwart.contracts.model import build_contracts
    from stalwart.contracts.run import (
        AgentResult,
        ArchiveStepsRequest,
        RunEvent,
        RunMetrics,
        RunState,
        RunStatus,
        StepArchive,
        StepRecord,
        StopReason,
    )
    from stalwart.contracts.run_input import (
        Carried,
        QueuedMessage,
        RunInput,
        TurnInProgress,
        message_problem,
        missing_goal,
    )
    from stalwart.contracts.tools import ToolSpec
    from stalwart.workflows import arguments, conversation, deadlines, delegation, policies, telemetry
    from stalwart.workflows.arguments import NO_ARGUMENT
    from stalwart.workflows.budget import Budget
    from stalwart.workflows.failures import innermost_message, long_rate_limit, message_unless_cancelled


def _listed_waiting_while_open() -> bool:
    """Whether this session is listed `waiting` throughout (`AgentWorkflow._listed_status`): sessions recorded
    before published `running` and `waiting` at every turn."""
    return workflow.patched("session-listed-waiting-while-open")


def _search_attributes_at_start() -> dict[str, object]:
    """Stalwart's search attributes this run started with, all set by `StalwartClient` when it starts a run.

    Upserting them again would cost a history event and a visibility write for nothing; a run started without
    them (another SDK, a sub-agent, an older client) upserts what it lacks, as every run did before."""
    attrs = workflow.info().typed_search_attributes
    values = {key.name: attrs.get(key) for key in names.SEARCH_ATTRIBUTES}
    return {name: value for name, value in values.items() if value is not None}


_COUNTERS = frozenset(key.name for key in (names.AGENT_STEPS, names.AGENT_TOKENS, names.AGENT_COST_USD))
INPUT_SCHEMA_HINT = (
    'the input is JSON {"agent": {...agent spec...}, "goal": "..."} (its JSON Schema: docs/run-input.schema.json)'
)


NO_INPUT = RawValue(Payload())
"""What the run gets when it is started with no input at all."""


def _decoded(raw: RawValue) -> tuple[RunInput, str | None]:
    """The run input, or a stand-in and the reason it is not one."""
    stand_in = RunInput(agent=AgentSpec(name="invalid-input"), goal="")
    if not raw.payload.metadata:
        return stand_in, f"invalid run input: the run was started without one; {INPUT_SCHEMA_HINT}"
    try:
        return workflow.payload_converter().from_payload(raw.payload, RunInput), None
    except Exception as err:  # pydantic's ValidationError, or JSON that does not parse
        reason = str(err).replace("\n", "; ")
        return RunInput(
            agent=AgentSpec(name="invalid-input"), goal=""
        ), f"invalid run input: {reason}; {INPUT_SCHEMA_HINT}"


class _ModelFailed(Exception):
    """The model activity failed for good; the turn ends with stop reason `error`."""


class _ContinueAsNew(Exception):
    """History is long: continue as new at this safe point, carrying the turn in progress."""


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
        # A subclass is sandboxed unless it says otherwise: its contracts must be built before it runs there.
        super().__init_subclass__(**kwargs)
        build_contracts()

    @workflow.init
    def __init__(self, raw_input: RawValue = NO_INPUT) -> None:
        # Decoded here rather than by the SDK: an input that does not decode would otherwise fail
        # every workflow task forever; this way the run fails at once, saying what is wrong.
        input, self._invalid = _decoded(raw_input)
        self._input = input
        self._agent = input.agent
        now = workflow.now()
        carried = input.carried
        self._closing = False
        self._answering = True  # until the session's loop has ended: what arrives after is answered by no turn
        self._continuing = False
        self._results: dict[str, AgentResult] = {}  # message id -> the result of the turn that read it
        self._read_in_turn: list[str] = []  # ids of messages read by the turn in progress
        self._waiters = 0  # `send` updates waiting for a turn to end
        self._pending: dict[str, PendingApproval] = {}
        self._decisions: dict[str, tuple[bool, ApprovalDecision]] = {}
        # A continued run upserts everything once, as runs recorded before this did.
        self._published = _search_attributes_at_start() if carried is None else {}
        self._published_at: datetime | None = now if self._published else None
        self._error: str | None = None
        self._budget: Budget | None = None
        self._budget_fired_at: datetime | None = None
        if carried is None:
            self._chain_id = workflow.info().run_id
            self._runs = 0
            self._chain_started = now
            self._step = 0
            self._steps: list[StepRecord] = []
            self._usage = Usage()
            self._transcript = TranscriptRef(chain_id=self._chain_id)
            self._context_ref: str | None = None
            self._unsent: list[Message] = []
            self._queued: list[QueuedMessage] = []
            self._earlier_results: dict[str, tuple[int, str]] = {}
            self._archives: list[StepArchive] = []
            self._turns = 0
            self._turn: TurnInProgress | None = None
            self._answer: str | None = None
            self._tools: list[ToolSpec] | None = None
            self._archived_metrics: RunMetrics | None = None
            if not input.session:
                self._record_user_message(input.goal, now)
            elif input.goal:  # a session's goal is its first message
                self._queued.append(QueuedMessage(id="goal", text=input.goal, received_at=now))
        else:
            self._chain_id = carried.chain_id
            self._runs = carried.runs
            self._chain_started = carried.started_at
            self._step = carried.step
            self._steps = []  # earlier runs' steps are archived, named by `self._archives`
            self._usage = carried.usage
            self._transcript = carried.transcript
            self._context_ref = carried.context_ref
            self._unsent = carried.unsent
            self._queued = carried.queued
            self._earlier_results = carried.earlier_results
            self._archives = carried.archives
            self._closing = carried.closing
            self._turns = carried.turns
            self._turn = carried.turn
            self._answer = carried.answer
            self._tools = carried.tools
            self._archived_metrics = carried.metrics
        self._status: RunStatus = "running"

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        input = self._input
        if self._invalid is not None:
            raise ApplicationError(self._invalid, type="InvalidRunInput", non_retryable=True)
        if (missing := missing_goal(input.goal, session=input.session)) is not None:
            raise ApplicationError(missing, type="InvalidRunInput", non_retryable=True)
        if input.carried is None:  # once per chain: a run continued as new is the same run
            telemetry.run_started(self._agent.name, session=input.session)
        kind = "session" if input.session else "invoke_agent"
        conversation_id = workflow.info().workflow_id if input.session else None
        attributes = telemetry.agent_attributes(self._agent.name, self._agent.model, conversation_id=conversation_id)
        with telemetry.span(f"{kind} {self._agent.name}", attributes) as span:
            result = await self._run_to_the_end()
            usage = result.usage
            span.set_attributes(
                telemetry.outcome_attributes(
                    result.stop_reason, self._step, usage.input_tokens, usage.output_tokens, usage.cost_usd
                )
            )
        telemetry.run_finished(self._agent.name, result.stop_reason, session=input.session)
        return result

    async def _run_to_the_end(self) -> AgentResult:
        """The run, or the session, until it stops or continues as new (which raises out of here)."""
        input = self._input
        self._publish()
        try:
            if self._tools is None:
                try:
                    self._tools = await self._describe_tools()
                except ActivityError as err:
                    self._error = innermost_message(err)
                    return self._finish("error")
                unknown = self._unknown_tool_names()
                # Asked only when a name is wrong, so other histories gain no marker; runs recorded before went on.
                if unknown is not None and workflow.patched("unknown-tool-names-end-the-run"):
                    self._error = unknown
                    return self._finish("error")
            stop = await (self._session() if input.session else self._one_goal())
        except _ContinueAsNew:
            # Raised only with no `send` waiting and the steps archived, so this wait does not yield.
            await workflow.wait_condition(workflow.all_handlers_finished)
            # The next run starts on the deployment's current version (worker versioning), even when this
            # one is pinned to an older one: long runs and sessions move to new code between runs.
            workflow.continue_as_new(
                self._carry(), initial_versioning_behavior=workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE
            )
        except asyncio.CancelledError:
            self._close_open_steps("cancelled")
            stop = "cancelled"
        self._answering = False
        if input.session:  # answer every `send` still waiting before the session ends
            for message_id in [*self._read_in_turn, *(q.id for q in self._queued)]:
                self._results.setdefault(message_id, self._closed_result(stop))
            await workflow.wait_condition(workflow.all_handlers_finished)
        if (
            stop != "cancelled"
            and conversation.step_text_chars(self._steps) > policies.RESULT_STEPS_INLINE_CHARS
            and workflow.patched("archive-large-step-log")  # runs recorded before this end as they did
        ):
            try:
                await self._archive_steps("of the result")
            except ActivityError as err:  # storage is down: the result keeps its steps rather than the run failing
                workflow.logger.warning("keeping the steps in the result: %s", innermost_message(err))
        return self._finish(stop)

    # -- queries, signals and updates ----------------------------------------

    @workflow.query
    def state(self) -> RunState:
        """The live step log, status and usage of the run (of the whole chain, across continue-as-new)."""
        return RunState(
            agent=self._agent.name,
            goal=self._input.goal,
            status=self._status,
            steps=self._steps,
            usage=self._usage,
            answer=self._answer,
            error=self._error,
            session=self._input.session,
            turns=self._turns,
            queued=len(self._queued),
            runs=self._runs + 1,
            earlier=self._archives,
        )

    @workflow.query
    def pending_approvals(self) -> list[PendingApproval]:
        """Tool calls waiting for a person's decision, with their arguments."""
        return list(self._pending.values())

    @workflow.query
    def events(self) -> list[RunEvent]:
        """The run so far in the KAOS memory-event vocabulary (docs/concepts.md)."""
        return conversation.events(self._steps, first_index=sum(archive.count for archive in self._archives))

    @workflow.update
    def approve(self, raw: RawValue = NO_ARGUMENT) -> str:
        """Let a waiting tool call run (an `ApprovalDecision`)."""
        decision = self._decision("approve", raw)
        self._decisions[decision.call_id] = (True, decision)
        return f"approved {decision.call_id}"

    @approve.validator
    def _validate_approve(self, raw: RawValue = NO_ARGUMENT) -> None:
        self._require_pending(self._decision("approve", raw))

    @workflow.update
    def reject(self, raw: RawValue = NO_ARGUMENT) -> str:
        """Refuse a waiting tool call (an `ApprovalDecision`); the model reads the refusal as the call's result."""
        decision = self._decision("reject", raw)
        self._decisions[decision.call_id] = (False, decision)
        return f"rejected {decision.call_id}"

    @reject.validator
    def _validate_reject(self, raw: RawValue = NO_ARGUMENT) -> None:
        self._require_pending(self._decision("reject", raw))

    @staticmethod
    def _text(handler: str, raw: RawValue) -> str:
        return arguments.decoded(raw, str, handler=handler, takes=arguments.MESSAGE_SHAPE)

    @staticmethod
    def _decision(handler: str, raw: RawValue) -> ApprovalDecision:
        return arguments.decoded(raw, ApprovalDecision, handler=handler, takes=arguments.DECISION_SHAPE)

    def _require_pending(self, decision: ApprovalDecision) -> None:
        """A decision on a call that waits, small enough to record (a 3 MB reason failed workflow tasks for minutes)."""
        if (problem := decision_problem(decision)) is not None:
            raise ApplicationError(problem)
        call_id = decision.call_id
        if call_id not in self._pending or call_id in self._decisions:
            waiting = ", ".join(self._pending) or "none"
            raise ApplicationError(f"no tool call {call_id!r} is waiting for approval in this run (waiting: {waiting})")

    @workflow.update
    async def send(self, raw: RawValue = NO_ARGUMENT) -> AgentResult:
        """Give the session a message (text); returns when the turn that read it ends, with that turn's result."""
        text = self._text("send", raw)
        update = workflow.current_update_info()
        message_id = update.id if update is not None else str(workflow.uuid4())
        self._enqueue(message_id, text)
        self._waiters += 1
        try:
            await workflow.wait_condition(lambda: message_id in self._results)
        finally:
            self._waiters -= 1
        return self._results.pop(message_id)

    @send.validator
    def _validate_send(self, raw: RawValue = NO_ARGUMENT) -> None:
        text = self._text("send", raw)
        if self._continuing:
            raise ApplicationError(
                "the session is continuing as new; send the message again in a moment",
                type=names.SESSION_CONTINUING,
            )
        problem = self._refusal(text)
        if problem is not None:
            raise ApplicationError(problem, type="MessageRefused", non_retryable=True)

    @workflow.signal
    def message(self, raw: RawValue = NO_ARGUMENT) -> None:
        """Give the run a message (text) without waiting; the model reads it at its next step."""
        try:
            text = self._text("message", raw)
        except ApplicationError as err:  # a signal has no answer: its sender can be told nothing
            workflow.logger.warning("message signal ignored: %s", err.message)
            return
        problem = self._refusal(text, signalled=True)
        if problem is not None:
            workflow.logger.warning("message signal ignored: %s", problem)
            return
        self._enqueue(f"signal-{workflow.uuid4()}", text)

    @workflow.signal(name="close")
    def close_signal(self) -> None:
        """End the session once the messages already received are answered."""
        self._closing = True

    @workflow.update(name="close")
    def close_update(self) -> str:
        """End the session once the messages already received are answered."""
        self._closing = True
        return f"session {workflow.info().workflow_id} is closing"

    def _refusal(self, text: str, *, signalled: bool = False) -> str | None:
        if not self._input.session and not signalled:
            return "this run is not a session: start one with `stalwart session start AGENT_FILE`"
        if (problem := message_problem(text, self._agent)) is not None:
            return problem
        if (self._closing or self._status in ("closed", "idle")) and not self._answered_while_closing(signalled):
            return "the session is closed: start a new one"
        if self._budget is not None and self._budget.lifetime_cost_reached():
            return f"the session has spent its [session] max_cost_usd={self._agent.session.max_cost_usd:g}"
        return None

    def _answered_while_closing(self, signalled: bool) -> bool:
        """Whether a message signalled after `close`, while the session still answers, is answered before it ends.

        A signal's sender cannot be told of a refusal (`send --no-wait` had said "sent" of a message then dropped),
        so one that comes while a turn still runs is answered, as the messages received before `close` are. A
        `send` update is still refused: its caller reads why. Asked only in that case, so other histories gain no
        marker; sessions recorded before dropped the message, and replay so."""
        return (
            signalled
            and self._input.session
            and self._answering
            and self._status not in ("closed", "idle")
            and workflow.patched("messages-signalled-while-closing-are-answered")
        )

    def _enqueue(self, message_id: str, text: str) -> None:
        self._queued.append(QueuedMessage(id=message_id, text=text, received_at=workflow.now()))
        self._publish()

    # -- a run and a session -------------------------------------------------

    async def _one_goal(self) -> StopReason:
        """A plain run: one turn towards the goal (perhaps continued from an earlier run of the chain)."""
        turn = self._turn or self._start_turn()
        return await self._run_turn(turn)

    async def _session(self) -> StopReason:
        """Answer each message as one turn, then wait for the next; `close` or the idle timeout ends it."""
        if self._turn is not None:
            await self._run_turn(self._turn)
        idle = self._agent.session.idle_timeout_seconds
        while True:
            self._status = "waiting"
            self._publish()
            if not self._queued and not self._closing and (self._continue_as_new_due() or self._outdated()):
                self._continuing = True  # from here `send` is refused as retryable: the next run takes it
                await self._archive_steps()
                await workflow.wait_condition(workflow.all_handlers_finished)
                raise _ContinueAsNew()
            try:
                await self._next_message(idle)
            except TimeoutError:
                return "idle"
            if not self._queued:
                return "closed"
            await self._run_turn(self._start_turn())

    async def _next_message(self, idle: float | None) -> None:
        """Wait for a message or `close`; TimeoutError once the session has been idle `idle` seconds.

        A session's status is not published per turn, so a turn shorter than `policies.COUNTERS_EVERY` leaves
        its step, token and cost counters unsent: they go out when that interval is over, if no message came
        first (a timer only in that case, and only in sessions recorded since that change)."""
        has_message = lambda: bool(self._queued) or self._closing  # noqa: E731
        idle_until = None if idle is None else workflow.now() + timedelta(seconds=idle)
        counters_due = self._counters_due()
        if counters_due is not None and (idle_until is None or counters_due < idle_until):
            try:
                await workflow.wait_condition(
                    has_message, timeout=counters_due - workflow.now(), timeout_summary="publish the counters"
                )
                return
            except TimeoutError:
                self._publish()
        await workflow.wait_condition(
            has_message,
            timeout=None if idle_until is None else idle_until - workflow.now(),
            timeout_summary=f"session idle timeout {idle:g}s" if idle is not None else None,
        )

    def _start_turn(self) -> TurnInProgress:
        self._turns += 1
        now = workflow.now()
        max_seconds = self._agent.budgets.max_seconds
        return TurnInProgress(
            number=self._turns,
            first_record=len(self._steps),
            started_at=now,
            deadline=None if max_seconds is None else now + timedelta(seconds=max_seconds),
        )

    async def _run_turn(self, turn: TurnInProgress) -> StopReason:
        """One turn within its wall-clock budget; its result goes to the `send` updates it answered.

        A session's turn is an `invoke_agent` span of its own, inside the session's span."""
        if not self._input.session:
            return await self._turn_within_budget(turn)
        attributes = telemetry.agent_attributes(
            self._agent.name, self._agent.model, conversation_id=workflow.info().workflow_id
        )
        with telemetry.span(
            f"invoke_agent {self._agent.name}", {**attributes, "stalwart.turn": turn.number}, ends_on=(_ContinueAsNew,)
        ) as span:
            stop = await self._turn_within_budget(turn)
            steps, spent = (self._budget.steps_taken, self._budget.spent) if self._budget else (0, Usage())
            span.set_attributes(
                telemetry.outcome_attributes(stop, steps, spent.input_tokens, spent.output_tokens, spent.cost_usd)
            )
            return stop

    async def _turn_within_budget(self, turn: TurnInProgress) -> StopReason:
        self._turn = turn
        self._status = "running"
        if self._input.session and (_listed_waiting_while_open() or workflow.patched("session-running-at-turn-start")):
            # The UI's current details say `running` from the message on. Sessions recorded between the two
            # patches also listed `running` from here; those recorded before either published it only after the
            # turn's first model call. A session recorded since records neither this marker nor its upsert.
            self._publish()
        self._answer = None
        self._error = None
        self._budget = Budget(
            agent=self._agent,
            started_at=turn.started_at,
            deadline=turn.deadline,
            steps_taken=turn.steps_taken,
            spent=turn.usage,
            lifetime=self._usage,
        )
        try:
            stop = await deadlines.before(
                turn.deadline, self._turn_steps(), summary=f"budget max_seconds={self._agent.budgets.max_seconds}"
            )
        except deadlines.DeadlineReached:
            self._close_open_steps(f"cancelled: wall-clock budget of {self._agent.budgets.max_seconds:g}s reached")
            stop = "max_seconds"
            self._budget_fired_at = turn.deadline  # later than now only if no worker was running at the deadline
        self._end_turn(turn, stop)
        return stop

    def _end_turn(self, turn: TurnInProgress, stop: StopReason) -> None:
        self._turn = None
        elapsed = (workflow.now() - turn.started_at).total_seconds()
        result = AgentResult(
            answer=self._answer or "",
            stop_reason=stop,
            steps=self._steps[turn.first_record :],
            usage=self._budget.spent if self._budget else Usage(),
            elapsed_seconds=elapsed,
            metrics=conversation.metrics(self._steps[turn.first_record :], elapsed_seconds=elapsed),
            error=self._error,
            budget_fired_after_seconds=(
                (turn.deadline - turn.started_at).total_seconds()
                if stop == "max_seconds" and turn.deadline is not None
                else None
            ),
        )
        for message_id in self._read_in_turn:
            self._results[message_id] = result
        self._read_in_turn = []

    async def _turn_steps(self) -> StopReason:
        assert self._budget is not None and self._turn is not None
        budget = self._budget
        try:
            while True:
                if not self._left_for_the_next_turn(budget):
                    self._read_queued_messages()
                if not self._waiters and self._continue_as_new_due():
                    self._continuing = True  # from here `send` is refused as retryable: the next run takes it
                    await self._archive_steps()
                    self._turn.steps_taken, self._turn.usage = budget.steps_taken, budget.spent
                    raise _ContinueAsNew()
                exhausted = budget.exhausted()
                if exhausted is not None:
                    return await self._stop_on_budget(exhausted)
                if self._tools and conversation.reminder_due(self._step, self._agent.loop):
                    self._unsent.append(Message(role="user", content=conversation.tool_reminder(self._tools)))
                # Tools on even when the agent has none: a text protocol still reads the reply for an action
                # (seed 000: no action, then one more call for the final response); providers offer no tools.
                turn = await self._model_turn(tools_enabled=True)
                if turn.truncated:
                    return self._stop_truncated(turn)
                if turn.feedback is not None:
                    self._unsent.append(Message(role="user", content=turn.feedback))
                    continue
                if turn.wants_final_answer:
                    self._unsent.append(Message(role="user", content=conversation.FINAL_RESPONSE_PROMPT))
                    turn = await self._model_turn(tools_enabled=False)
                    if turn.truncated:
                        return self._stop_truncated(turn)
                if not turn.tool_calls and not self._queued and self._nudged(turn.text):
                    self._unsent.append(Message(role="user", content=self._agent.loop.persistence_prompt))
                    continue
                if not turn.tool_calls and not self._queued:
                    self._answer = turn.text
                    self._steps[-1].final = True
                    return "done"
                if turn.tool_calls:
                    await self._run_tools(turn.tool_calls)
        except _ModelFailed:
            return "error"

    def _nudged(self, answer: str) -> bool:
        """Whether an answer that gives up early is met with the persistence prompt instead of ending the turn.

        Seed 003's premature giving-up ("I'm sorry, I wasn't able to find ..." while tools could find it): at most
        `[loop] persistence_nudges` times a turn, only with tools to use and a step left to use them.
        """
        assert self._turn is not None and self._budget is not None
        loop = self._agent.loop
        if self._turn.nudges >= loop.persistence_nudges or not self._tools or self._budget.exhausted() is not None:
            return False
        if not conversation.gives_up(answer, loop) or not workflow.patched("persistence-nudge"):
            return False  # `patched`: a run recorded before nudges existed replays as it ran
        self._turn.nudges += 1
        return True

    def _stop_truncated(self, turn: AssistantTurn) -> StopReason:
        """A reply cut off by the output-token limit is no answer: stop with `max_tokens`, as the Strands loop does,
        saying why; the cut-off text stays in the step log and its tool calls (likely cut off too) are not run."""
        limit = self._agent.max_output_tokens
        self._error = (
            f"the model's reply at step {self._step} was cut off by its output-token limit "
            f"(stop reason {turn.stop_reason!r}; max_output_tokens = {limit if limit else 'the provider default'}), "
            f"so the run stops instead of taking it as the answer. Raise `max_output_tokens` in the agent file, "
            f"or ask for a shorter answer."
        )
        return "max_tokens"

    def _left_for_the_next_turn(self, budget: Budget) -> bool:
        """Whether the messages that came during a session's turn wait for the next turn, because this one has spent
        its budget: read now, they would be marked answered by a turn whose model never saw them.

        `patched`: a session recorded before this change read them into the spent turn, and replays as it ran."""
        return (
            self._input.session
            and bool(self._queued)
            and bool(self._read_in_turn)  # a turn's first messages are read whatever is left of a lifetime budget
            and budget.exhausted() is not None
            and workflow.patched("messages-wait-out-a-spent-turn")
        )

    def _read_queued_messages(self) -> None:
        """Messages that arrived during the turn reach the model at its next step, in order."""
        now = workflow.now()
        for queued in self._queued:
            self._record_user_message(queued.text, now)
            self._read_in_turn.append(queued.id)
        self._queued = []

    def _record_user_message(self, text: str, now: datetime) -> None:
        self._unsent.append(Message(role="user", content=text))
        self._steps.append(StepRecord(step=self._step, role="user", content=text, started_at=now, ended_at=now))

    async def _stop_on_budget(self, reason: StopReason) -> StopReason:
        if self._agent.budgets.finalize_on_budget and reason in ("max_steps", "max_tokens", "max_cost"):
            budget = reason.removeprefix("max_")
            self._unsent.append(Message(role="user", content=conversation.FINALIZE_PROMPT.format(budget=budget)))
            turn = await self._model_turn(tools_enabled=False)
            self._answer = turn.text
            self._steps[-1].final = True
        elif reason == "max_steps":
            self._answer = conversation.MAX_STEPS_ANSWER.format(n=self._agent.budgets.max_steps)
        return reason

    def _continue_as_new_due(self) -> bool:
        info = workflow.info()
        limit = self._agent.session.continue_as_new_events
        if limit is not None:
            return info.get_current_history_length() >= limit
        return info.is_continue_as_new_suggested()

    def _outdated(self) -> bool:
        """A newer worker deployment version has become current since this run started (worker versioning):
        a session at rest continues as new onto it instead of keeping its pinned old version for weeks."""
        return workflow.info().is_target_worker_deployment_version_changed()

    async def _archive_steps(self, why: str = "before continuing as new") -> None:
        """Keep this run's steps in storage; the next run (or the result) names the archives instead of holding them.

        At the end of a run this keeps a large step log out of the result, which would repeat in history
        every tool result already recorded there; `RunHandle.result()` joins the archives back.
        """
        if not self._steps:
            return
        archive = await workflow.execute_activity(
            names.ARCHIVE_STEPS_ACTIVITY,
            ArchiveStepsRequest(
                chain_id=self._chain_id,
                index=len(self._archives),
                steps=[step.archived() for step in self._steps],  # stored results are not sent again
            ),
            result_type=StepArchive,
            start_to_close_timeout=policies.ARCHIVE_TIMEOUT,
            retry_policy=policies.ARCHIVE_RETRY,
            summary=f"archive {len(self._steps)} steps {why}",
        )
        self._archives.append(archive)
        self._archived_metrics = conversation.metrics(self._steps, self._archived_metrics)
        self._steps = []
        if self._turn is not None:
            self._turn.first_record = 0

    def _carry(self) -> RunInput:
        assert self._tools is not None
        carried = Carried(
            chain_id=self._chain_id,
            runs=self._runs + 1,
            started_at=self._chain_started,
            step=self._step,
            usage=self._usage,
            transcript=self._transcript,
            context_ref=self._context_ref,
            unsent=self._unsent,
            queued=self._queued,
            earlier_results=conversation.latest_results(self._earlier_results),
            archives=self._archives,
            closing=self._closing,
            turns=self._turns,
            turn=self._turn,
            answer=self._answer,
            tools=self._tools,
            metrics=self._archived_metrics,
        )
        return self._input.model_copy(update={"carried": carried})

    # -- activities ----------------------------------------------------------

    def _unknown_tool_names(self) -> str | None:
        """Names in `require_approval` or `[bindings]` that no tool offered to this run has, before any tool runs."""
        if self._agent.mcp_servers and not self._agent.loop.enable_tools:
            return None  # the MCP servers' tools were not listed: nothing to judge their names by
        return unknown_tool_names(self._agent, [tool.name for tool in self._tools or []])

    async def _describe_tools(self) -> list[ToolSpec]:
        """The tools the model is offered; seed 001's `enable_tools` / `enable_delegation` leave out a kind."""
        loop = self._agent.loop
        agent_tools = await delegation.describe(self._agent) if loop.enable_delegation else []
        if not loop.enable_tools or (not self._agent.tools and not self._agent.mcp_servers):
            return agent_tools
        servers = [*self._agent.tools, *(s.name for s in self._agent.mcp_servers)]
        result = await workflow.execute_activity(
            names.DESCRIBE_TOOLS_ACTIVITY,
            DescribeToolsRequest(agent=self._agent),
            result_type=DescribeToolsResult,
            # Room for the slowest server's handshake deadline, so that deadline, which names the server, fires first.
            start_to_close_timeout=max(
                policies.DESCRIBE_TIMEOUT,
                timedelta(seconds=max((s.handshake_seconds for s in self._agent.mcp_servers), default=0) + 30),
            ),
            retry_policy=policies.DESCRIBE_RETRY,
            summary=f"describe tools · {', '.join(servers)}"[:200],
        )
        return [*result.tools, *agent_tools]

    async def _model_turn(self, *, tools_enabled: bool) -> AssistantTurn:
        assert self._budget is not None and self._tools is not None
        self._step += 1
        self._budget.steps_taken += 1
        record = StepRecord(step=self._step, role="assistant", started_at=workflow.now())
        self._steps.append(record)
        request = ModelRequest(
            step=self._step,
            transcript=self._transcript,
            new_messages=self._unsent,
            context=None if self._context_ref else AgentContext(agent=self._agent, tools=self._tools),
            context_ref=self._context_ref,
            tools_enabled=tools_enabled,
            deadline=self._budget.deadline,
            may_defer=True,
        )
        waits = 0
        while True:
            start_to_close, schedule_to_close = deadlines.capped(
                request.deadline, policies.MODEL_START_TO_CLOSE, policies.MODEL_SCHEDULE_TO_CLOSE
            )
            try:
                turn = await workflow.execute_activity(
                    names.MODEL_ACTIVITY,
                    request,
                    result_type=AssistantTurn,
                    start_to_close_timeout=start_to_close,
                    schedule_to_close_timeout=schedule_to_close,
                    heartbeat_timeout=policies.MODEL_HEARTBEAT,
                    retry_policy=policies.MODEL_RETRY,
                    summary=f"model {self._agent.model} · step {self._step}",
                )
                if turn.needs_summary and not request.summarize:
                    # Context strategy `summarize`: the conversation overflows its window. This step's model call
                    # writes a summary of the older messages instead (an activity of its own, so the summary is in
                    # history); the next step asks for the turn again, on the shorter conversation.
                    self._transcript = turn.transcript or self._transcript
                    self._context_ref = turn.context_ref or self._context_ref
                    self._unsent = []
                    update: dict[str, Any] = {"summarize": True, "transcript": self._transcript, "context": None}
                    request = request.model_copy(
                        update={**update, "new_messages": [], "context_ref": self._context_ref}
                    )
                    continue
                break
            except ActivityError as err:
                if deadlines.budget_over(err, request.deadline):
                    raise deadlines.DeadlineReached() from err
                limited = long_rate_limit(err)
                refusal = None if limited is None else self._rate_limit_refusal(*limited, waits=waits)
                if limited is not None and refusal is None:
                    waits += 1
                    seconds, provider = limited
                    await workflow.sleep(seconds, summary=f"rate limited by {provider}: waiting {seconds:g} s")
                    continue
                record.error = refusal or message_unless_cancelled(err)
                record.ended_at = workflow.now()
                self._error = f"model call at step {self._step} failed: {record.error}"
                raise _ModelFailed() from err
        if request.summarize:
            return await self._after_summary(record, turn, tools_enabled=tools_enabled)
        record.content = turn.text
        record.usage = turn.usage
        record.stop_reason = turn.stop_reason
        record.ended_at = workflow.now()
        self._budget.charge(turn.usage)
        self._usage = self._usage + turn.usage
        if turn.transcript is not None:
            self._transcript = turn.transcript
        self._context_ref = turn.context_ref or self._context_ref
        if turn.deferred:  # nothing stored: the next request carries what this one did, and the answer
            self._unsent = [*request.new_messages, turn.as_message()]
        else:
            self._unsent = [] if turn.recorded else [turn.as_message()]
        self._publish()
        return turn

    async def _after_summary(self, record: StepRecord, summary: AssistantTurn, *, tools_enabled: bool) -> AssistantTurn:
        """Record the summary step (not one of `max_steps`, its tokens charged), then make the model call it made
        room for."""
        assert self._budget is not None
        record.content, record.usage, record.summary = summary.text, summary.usage, True
        record.ended_at = workflow.now()
        self._budget.charge(summary.usage)
        self._usage = self._usage + summary.usage
        self._budget.steps_taken -= 1
        self._transcript = summary.transcript or self._transcript
        self._publish()
        return await self._model_turn(tools_enabled=tools_enabled)

    def _rate_limit_refusal(self, seconds: float, provider: str, *, waits: int) -> str | None:
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
        assert self._budget is not None
        left = self._budget.remaining_seconds(workflow.now())
        if left is not None and seconds >= left:
            return (
                f"{asked}, but only {left:.0f} s of this run's wall-clock budget "
                f"(max_seconds={self._agent.budgets.max_seconds:g}) is left; stopped instead of waiting. "
                "Raise max_seconds to let runs wait out rate limits, or run again later."
            )
        return None

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        """Run one turn's tool calls, at most `max_parallel_tools` at once; results keep call order."""
        limit = asyncio.Semaphore(self._agent.budgets.max_parallel_tools)
        records = [
            StepRecord(
                step=self._step,
                role="tool",
                tool_call_id=call.id,
                tool_name=call.name,
                tool_kind=tool.kind if (tool := self._tool_named(call.name)) else None,
                arguments=call.arguments,
                started_at=workflow.now(),
            )
            for call in calls
        ]
        self._steps.extend(records)
        results = await asyncio.gather(
            *(self._run_tool(call, record, limit) for call, record in zip(calls, records, strict=True))
        )
        # A large result is in storage (the tool activity put it there): the model call reads it from there, so
        # history holds it once, in the tool's completion.
        self._unsent.append(Message(role="tool", tool_results=[result.by_reference() for result in results]))

    async def _run_tool(self, call: ToolCall, record: StepRecord, limit: asyncio.Semaphore) -> ToolResult:
        async with limit:
            record.started_at = workflow.now()
            result = await self._traced_tool(call)
            record.ended_at = workflow.now()
        if result.is_error:
            record.error = result.text
        else:
            record.result, record.result_stored = result.text, result.stored
        return result

    async def _traced_tool(self, call: ToolCall) -> ToolResult:
        """A tool call inside its `execute_tool` span; a sub-agent's run or an A2A delegation nests under it."""
        tool = self._tool_named(call.name)
        attributes = telemetry.tool_attributes(call.name, call.id, tool.kind if tool else "unknown", self._step)
        with telemetry.span(
            f"execute_tool {call.name}",
            attributes,
            ends_on=(deadlines.DeadlineReached, delegation.DelegationCancelled),
        ) as span:
            result = await self._execute_tool(call)
            if result.is_error:
                span.error("tool_error", result.text)
            return result

    async def _execute_tool(self, call: ToolCall) -> ToolResult:
        if call.arguments_error is not None:
            return ToolResult.failure(call, f"Malformed arguments: {call.arguments_error}")
        tool = self._tool_named(call.name)
        if tool is None:
            available = ", ".join(t.name for t in self._tools or []) or "none"
            return ToolResult.failure(
                call, f"Unknown tool: {call.name}", f"Call one of the available tools: {available}."
            )
        guarded = self._agent.thrash_guard and not tool.side_effecting
        repeat_key = f"{call.name} {json.dumps(call.arguments, sort_keys=True)}"
        if guarded and repeat_key in self._earlier_results:
            step, content = self._earlier_results[repeat_key]
            return ToolResult(
                call_id=call.id, name=call.name, content=conversation.ALREADY_CALLED.format(step=step, result=content)
            )
        if tool.requires_approval or tool.name in self._agent.require_approval:
            refusal = await self._wait_for_approval(call)
            if refusal is not None:
                return ToolResult.failure(call, refusal, conversation.REJECTED_HINT)
        result = await self._dispatch(call, tool)
        if guarded and not result.is_error:
            self._earlier_results[repeat_key] = (self._step, result.text)
        return result

    async def _dispatch(self, call: ToolCall, tool: ToolSpec) -> ToolResult:
        if tool.kind == "agent":
            return await self._delegate(call, tool)
        assert self._budget is not None
        deadline = self._budget.deadline
        start_to_close, schedule_to_close = deadlines.capped(deadline, timedelta(seconds=tool.timeout_seconds))
        try:
            return await workflow.execute_activity(
                names.RUN_TOOL_ACTIVITY,
                ToolRequest(
                    call=call,
                    tool=tool.for_running(),
                    idempotency_key=conversation.call_key(
                        workflow.info().workflow_id, self._chain_id, self._step, call.id
                    ),
                    run_inputs=self._input.inputs,
                    deadline=deadline,
                    chain_id=self._chain_id,
                ),
                result_type=ToolResult,
                start_to_close_timeout=start_to_close,
                schedule_to_close_timeout=schedule_to_close,
                heartbeat_timeout=timedelta(seconds=tool.heartbeat_timeout_seconds),
                retry_policy=policies.TOOL_RETRY,
                summary=f"tool {call.name}",
            )
        except ActivityError as err:
            if deadlines.budget_over(err, deadline):
                raise deadlines.DeadlineReached() from err
            return ToolResult.failure(call, message_unless_cancelled(err))

    async def _wait_for_approval(self, call: ToolCall) -> str | None:
        """Hold the call until a person approves or rejects it, or the approval timeout rejects it.

        None means approved.
        """
        if call.id in self._pending:  # a person approves a call by its id, so two waiting at once must differ
            return (
                f"Not run: another call with id {call.id!r} is already waiting for approval; "
                "give each tool call its own id"
            )
        timeout = self._agent.approval_timeout_seconds
        now = workflow.now()
        telemetry.approval_requested(self._agent.name, call.name)
        self._pending[call.id] = PendingApproval(
            call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            step=self._step,
            requested_at=now,
            expires_at=now + timedelta(seconds=timeout),
        )
        self._status = "awaiting_approval"
        self._publish()
        try:
            await workflow.wait_condition(
                lambda: call.id in self._decisions,
                timeout=timedelta(seconds=timeout),
                timeout_summary=f"approval of {call.name} · {call.id}",
            )
            approved, decision = self._decisions.pop(call.id)  # consumed: a later call reusing the id waits anew
            refusal = (
                None
                if approved
                else f"Rejected by {decision.reviewer or 'a reviewer'}: {decision.reason or 'no reason given'}"
            )
        except TimeoutError:
            refusal = f"Rejected: nobody approved this call within {timeout:g} seconds"
        except BaseException as err:
            # Cancelled: the call is no longer pending. Evicted from the worker's cache (GeneratorExit, e.g. the
            # worker stopping): the coroutine is being closed outside the workflow's event loop, where a workflow
            # call (the search attribute update) raises; the next worker rebuilds this state by replay.
            if not isinstance(err, GeneratorExit):
                self._approval_over(call)
            raise
        self._approval_over(call)
        return refusal

    def _approval_over(self, call: ToolCall) -> None:
        del self._pending[call.id]
        if not self._pending:
            self._status = "running"
        self._publish()

    def _tool_named(self, name: str) -> ToolSpec | None:
        return next((t for t in self._tools or [] if t.name == name), None)

    async def _delegate(self, call: ToolCall, tool: ToolSpec) -> ToolResult:
        """Run a sub-agent; what it may spend is held back from siblings of the same turn until it ends."""
        assert self._budget is not None
        budget = self._budget
        context = self._delegation_context()
        held = delegation.reservation(tool, context)
        budget.held = budget.held + held
        try:
            delegated = await delegation.delegate(call, tool, context)
        except delegation.DelegationCancelled as cancelled:
            self._charge(cancelled.usage)
            raise
        finally:
            budget.held = budget.held - held
        self._charge(delegated.usage)
        return delegated.result

    def _charge(self, usage: Usage) -> None:
        assert self._budget is not None
        self._budget.charge(usage)
        self._usage = self._usage + usage

    def _delegation_context(self) -> delegation.DelegationContext:
        """What a sub-agent may still spend: this turn's budget less what it used and what running siblings hold."""
        assert self._budget is not None
        return delegation.DelegationContext(
            parent_id=workflow.info().workflow_id,
            step=self._step,
            chain_id=self._chain_id,
            inputs=self._input.inputs,
            remaining_tokens=self._budget.remaining_tokens(),
            remaining_seconds=self._budget.remaining_seconds(workflow.now()),
            remaining_cost_usd=self._budget.remaining_cost_usd(),
        )

    # -- bookkeeping ---------------------------------------------------------

    def _close_open_steps(self, why: str) -> None:
        now = workflow.now()
        for record in self._steps:
            if record.ended_at is None:
                record.ended_at = now
                record.error = why

    def _counters_wait(self, changed: list[SearchAttributeKey[Any]]) -> bool:
        """Whether only the step, token and cost counters changed, and too recently to upsert them again.

        An upsert per step cost a third of a step's time (a history event and a visibility write each), for
        counters nobody reads at that pace: they go out with the next change of status (every turn's end and
        the run's end are one) or after `policies.COUNTERS_EVERY`.
        """
        if any(key.name not in _COUNTERS for key in changed):
            return False
        if self._published_at is not None and workflow.now() - self._published_at >= policies.COUNTERS_EVERY:
            return False
        return workflow.patched("search-attribute-counters-throttled")  # runs recorded before upsert every step

    def _listed_status(self) -> RunStatus:
        """The status the run list shows: an open session is `waiting` (for messages) even while a turn runs.

        Publishing each turn's `running` and `waiting` cost a session turn two upserts, a quarter of its time
        (bench/step_cost.py); whether a turn is running right now is live in `stalwart show` and the UI's
        current details instead. Approvals and the session's end are still published."""
        if self._input.session and self._status == "running" and _listed_waiting_while_open():
            return "waiting"
        return self._status

    def _attributes(self) -> dict[SearchAttributeKey[Any], Any]:
        return {
            names.AGENT_NAME: self._agent.name,
            names.AGENT_STATUS: self._listed_status(),
            names.AGENT_STEPS: self._step,
            names.AGENT_TOKENS: self._usage.total_tokens,
            names.AGENT_COST_USD: self._usage.cost_usd,
            names.AGENT_AWAITING_APPROVAL: bool(self._pending),
        }

    def _unpublished(self, current: dict[SearchAttributeKey[Any], Any]) -> list[SearchAttributeKey[Any]]:
        return [key for key, value in current.items() if self._published.get(key.name) != value]

    def _counters_due(self) -> datetime | None:
        """When the counters held back by `_counters_wait` may go out; None if none are held back."""
        if self._published_at is None or not self._unpublished(self._attributes()):
            return None
        return self._published_at + policies.COUNTERS_EVERY

    def _publish(self) -> None:
        """Keep the search attributes and the UI's current details in step with the run."""
        current = self._attributes()
        changed = self._unpublished(current)
        if changed and not self._counters_wait(changed):  # each upsert is a history event: send only what changed
            workflow.upsert_search_attributes([key.value_set(current[key]) for key in changed])
            self._published.update({key.name: value for key, value in current.items()})
            self._published_at = workflow.now()
        last = self._steps[-1] if self._steps else None
        turns = f" · turn {self._turns}" if self._input.session else ""
        # The UI's static summary can only be set by whoever starts the run (StalwartClient does); a run started
        # from the `temporal` CLI or another SDK still shows its agent and goal here, set by the workflow itself.
        goal = self._input.goal if len(self._input.goal) <= 200 else self._input.goal[:200] + " …"
        what = "session" if self._input.session else f"goal: {goal}"
        workflow.set_current_details(
            f"**{self._agent.name}** · {self._status}{turns} · step {self._step} · "
            f"{self._usage.total_tokens} tokens\n\n{what}\n\n"
            f"last: {last.role + ' ' + (last.tool_name or '') if last else '-'}"
        )

    def _finish(self, stop: StopReason) -> AgentResult:
        self._status = stop
        if self._answer is None:
            self._answer = ""
        self._publish()
        elapsed = (workflow.now() - self._chain_started).total_seconds()
        return AgentResult(
            answer=self._answer,
            stop_reason=stop,
            steps=self._steps,
            usage=self._usage,
            elapsed_seconds=elapsed,
            metrics=conversation.metrics(self._steps, self._archived_metrics, elapsed),
            error=self._error,
            earlier=self._archives,
            budget_fired_after_seconds=(
                (self._budget_fired_at - self._chain_started).total_seconds()
                if stop == "max_seconds" and self._budget_fired_at is not None
                else None
            ),
        )

    def _closed_result(self, stop: StopReason) -> AgentResult:
        why = f"the session ended ({stop}) before this message was answered"
        return AgentResult(answer="", stop_reason=stop, steps=[], usage=Usage(), elapsed_seconds=0.0, error=why)
