"""The session inbox: messages waiting for a turn, the messages the turn in progress has read, and the answers.

A `send` update waits here until the turn that read its message ends, and returns that turn's result; a
`message` signal is queued without an answer. `close` lets the messages already received be answered first.
Queued messages and `closing` are chain state (`ChainState`): a session continued as new keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import failure_types
    from stalwart.contracts.messages import Usage
    from stalwart.contracts.run import AgentResult, StepRecord, StopReason
    from stalwart.contracts.run_input import QueuedMessage, RunInput, message_problem
    from stalwart.contracts.send_result import SHAPE, SendResult
    from stalwart.workflows import arguments, patches
    from stalwart.workflows.budget import Budget
    from stalwart.workflows.chain import Chain
    from stalwart.workflows.visibility import Visibility


def message_text(handler: str, args: Sequence[RawValue]) -> str:
    """The text a `send` update or `message` signal carries, or the error that says what it should be."""
    raw = arguments.only(args, handler=handler, takes=arguments.MESSAGE_SHAPE)
    return arguments.decoded(raw, str, handler=handler, takes=arguments.MESSAGE_SHAPE)


class Inbox:
    """Messages in, answers out: what waits for a turn, what the turn read, who waits for its answer."""

    def __init__(self, input: RunInput, chain: Chain, visibility: Visibility) -> None:
        self._input = input
        self._chain = chain
        self._visibility = visibility
        self.answering = True  # until the session's loop has ended: what arrives after is answered by no turn
        self.continuing = False
        """The session is continuing as new: `send` is refused as retryable, and the next run takes it."""
        self.spending: Budget | None = None
        """The latest turn's budget: its lifetime spending may refuse messages (`[session] max_cost_usd`)."""
        self._results: dict[str, AgentResult] = {}  # message id -> the result of the turn that read it
        self._read_in_turn: list[str] = []  # ids of messages read by the turn in progress
        self._recorded: dict[str, StepRecord] = {}  # message id -> its step in the log, while its turn runs
        self.waiters = 0  # `send` updates waiting for a turn to end
        self._by_update: set[str] = set()  # ids of queued messages that came by a `send` update of this run

    # -- messages in ---------------------------------------------------------

    def enqueue(self, message_id: str, text: str) -> None:
        update = workflow.current_update_info()
        if update is not None and update.id == message_id:  # its text is in history, as the update's argument
            self._by_update.add(message_id)
        self._chain.state.queued.append(QueuedMessage(id=message_id, text=text, received_at=workflow.now()))
        self._visibility.publish()

    async def answer_to(self, message_id: str) -> AgentResult:
        """The result of the turn that reads the message, once it ends (or of the session's end, if first)."""
        self.waiters += 1
        try:
            await workflow.wait_condition(lambda: message_id in self._results)
        finally:
            self.waiters -= 1
        return self._results.pop(message_id)

    def check_send(self, text: str) -> None:
        """Refuse a `send` the session cannot take, saying whether sending again may help."""
        if self.continuing:
            raise ApplicationError(
                "the session is continuing as new; send the message again in a moment",
                type=failure_types.SESSION_CONTINUING,
            )
        problem = self.refusal(text)
        if problem is not None:
            raise ApplicationError(problem, type=failure_types.MESSAGE_REFUSED, non_retryable=True)

    def check_close(self) -> None:
        """Refuse a `close` of a run of one goal: it ends with its answer, so closing it would mean nothing."""
        if not self._input.session:
            raise ApplicationError(
                "this run is not a session, so there is nothing to close: it ends with its answer (`stalwart cancel "
                "RUN_ID` stops it sooner)",
                type=failure_types.INVALID_ARGUMENT,
                non_retryable=True,
            )

    def close(self) -> None:
        self._chain.state.closing = True

    def refusal(self, text: str, *, signalled: bool = False) -> str | None:
        """Why the message is refused, if it is."""
        agent = self._input.agent
        if not self._input.session and not signalled:
            return "this run is not a session: start one with `stalwart session start AGENT_FILE`"
        if (problem := message_problem(text, agent)) is not None:
            return problem
        closed = self._chain.state.closing or self._visibility.status in ("closed", "idle")
        if closed and not self._answered_while_closing(signalled):
            return "the session is closed: start a new one"
        if self.spending is not None and self.spending.lifetime_cost_reached():
            return f"the session has spent its [session] max_cost_usd={agent.session.max_cost_usd:g}"
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
            and self.answering
            and self._visibility.status not in ("closed", "idle")
            and patches.active(patches.MESSAGES_SIGNALLED_WHILE_CLOSING_ARE_ANSWERED)
        )

    # -- between turns -------------------------------------------------------

    def has_message(self) -> bool:
        return bool(self._chain.state.queued) or self._chain.state.closing

    async def next_message(self, idle: float | None) -> None:
        """Wait for a message or `close`; TimeoutError once the session has been idle `idle` seconds.

        A session's status is not published per turn, so a turn shorter than `policies.COUNTERS_EVERY` leaves
        its step, token and cost counters unsent: they go out when that interval is over, if no message came
        first (a timer only in that case)."""
        idle_until = None if idle is None else workflow.now() + timedelta(seconds=idle)
        counters_due = self._visibility.counters_due()
        if counters_due is not None and (idle_until is None or counters_due < idle_until):
            try:
                await workflow.wait_condition(
                    self.has_message, timeout=counters_due - workflow.now(), timeout_summary="publish the counters"
                )
                return
            except TimeoutError:
                self._visibility.publish()
        await workflow.wait_condition(
            self.has_message,
            timeout=None if idle_until is None else idle_until - workflow.now(),
            timeout_summary=f"session idle timeout {idle:g}s" if idle is not None else None,
        )

    # -- during a turn -------------------------------------------------------

    def left_for_the_next_turn(self, budget: Budget) -> bool:
        """Whether the messages that came during a session's turn wait for the next turn, because this one has spent
        its budget: read now, they would be marked answered by a turn whose model never saw them.

        `patched`: a session recorded before this change read them into the spent turn, and replays as it ran."""
        return (
            self._input.session
            and bool(self._chain.state.queued)
            and bool(self._read_in_turn)  # a turn's first messages are read whatever is left of a lifetime budget
            and budget.exhausted() is not None
            and patches.active(patches.MESSAGES_WAIT_OUT_A_SPENT_TURN)
        )

    def read_into_turn(self) -> None:
        """Messages that arrived during the turn reach the model at its next step, in order."""
        now = workflow.now()
        state = self._chain.state
        for queued in state.queued:
            by_update = queued.id in self._by_update
            self._by_update.discard(queued.id)
            self._chain.record_user_message(queued.text, now, update_id=queued.id if by_update else None)
            self._read_in_turn.append(queued.id)
            self._recorded[queued.id] = self._chain.steps[-1]
        state.queued = []

    def answer_turn(self, result: AgentResult) -> None:
        """The turn ended: every message it read is answered with its result.

        A session's `send` gets it without the texts history holds already (`SendResult`, shape 3): its message is
        the update's argument, the answer the model call's result. `patched`: sessions recorded before answered
        with every text repeated, and replay so."""
        slim = self._input.session and bool(self._read_in_turn) and patches.active(patches.SEND_RESULT_WITHOUT_ECHOES)
        # Shape 3 leaves out the metrics too, which the steps say; sessions recorded between the patches answer in 2.
        shape = SHAPE if slim and patches.active(patches.SEND_RESULT_WITHOUT_METRICS) else 2
        for message_id in self._read_in_turn:
            own = self._recorded.pop(message_id, None)
            self._results[message_id] = SendResult.without_echoes(result, own, shape) if slim else result
        self._read_in_turn = []

    def answer_the_rest(self, stop: StopReason) -> None:
        """The session ends: every message still unanswered is told so."""
        why = f"the session ended ({stop}) before this message was answered"
        for message_id in [*self._read_in_turn, *(q.id for q in self._chain.state.queued)]:
            self._results.setdefault(
                message_id,
                AgentResult(answer="", stop_reason=stop, steps=[], usage=Usage(), elapsed_seconds=0.0, error=why),
            )
