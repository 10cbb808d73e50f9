"""The approval gate: a tool call that needs a person's decision waits here until it comes, or its timeout does.

A person decides by the call's id (`approve` and `reject` updates, whose validators refuse a decision on a call
that does not wait); the model reads a refusal, or the timeout, as the call's result.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.approvals import ApprovalDecision, PendingApproval, decision_problem
    from stalwart.contracts.messages import ToolCall
    from stalwart.workflows import arguments, telemetry


def decision(handler: str, raw: RawValue) -> ApprovalDecision:
    """The decision an `approve` or `reject` update carries, or the error that says what it should be."""
    return arguments.decoded(raw, ApprovalDecision, handler=handler, takes=arguments.DECISION_SHAPE)


class ApprovalGate:
    """The calls waiting for a decision, and the decisions not yet taken up by their call."""

    def __init__(self, agent: AgentSpec, on_change: Callable[[bool], None]) -> None:
        self._agent = agent
        self._on_change = on_change
        """Told, as a call begins or stops waiting, whether any call still waits."""
        self.pending: dict[str, PendingApproval] = {}
        self._decisions: dict[str, tuple[bool, ApprovalDecision]] = {}

    def decide(self, approved: bool, decision: ApprovalDecision) -> None:
        self._decisions[decision.call_id] = (approved, decision)

    def require_pending(self, decision: ApprovalDecision) -> None:
        """A decision on a call that waits, small enough to record (a 3 MB reason failed workflow tasks for minutes)."""
        if (problem := decision_problem(decision)) is not None:
            raise ApplicationError(problem)
        call_id = decision.call_id
        if call_id in self.pending and call_id in self._decisions:  # decided, and not yet gone from `pending`
            taken = "approved" if self._decisions[call_id][0] else "rejected"
            raise ApplicationError(f"tool call {call_id!r} has been {taken} already: a call is decided once")
        if call_id not in self.pending:
            waiting = ", ".join(c for c in self.pending if c not in self._decisions) or "none"
            raise ApplicationError(f"no tool call {call_id!r} is waiting for approval in this run (waiting: {waiting})")

    async def wait(self, call: ToolCall, step: int) -> str | None:
        """Hold the call until a person approves or rejects it, or the approval timeout rejects it.

        None means approved.
        """
        if call.id in self.pending:  # a person approves a call by its id, so two waiting at once must differ
            return (
                f"Not run: another call with id {call.id!r} is already waiting for approval; "
                "give each tool call its own id"
            )
        timeout = self._agent.approval_timeout_seconds
        now = workflow.now()
        telemetry.approval_requested(self._agent.name, call.name)
        self.pending[call.id] = PendingApproval(
            call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            step=step,
            requested_at=now,
            expires_at=now + timedelta(seconds=timeout),
        )
        self._on_change(True)
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
                self._over(call)
            raise
        self._over(call)
        return refusal

    def _over(self, call: ToolCall) -> None:
        del self.pending[call.id]
        self._on_change(bool(self.pending))
