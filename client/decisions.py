"""Whether a tool call was decided already, and how: what a second decision on the same call is answered with.

The approval gate refuses a decision on a call that no longer waits; once the call has gone on, it no longer tells
such a call from one that never waited (`no tool call ... is waiting (waiting: none)`). The decisions a run took
are in its history, as the `approve` and `reject` updates it accepted, across the continue-as-new chain: the newest
one on the call says how it was decided, by whom and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter

from stalwart.contracts.approvals import ApprovalDecision

_DECISIONS = {"approve": "approved", "reject": "rejected"}


@dataclass(frozen=True)
class Taken:
    """A decision the run accepted: `approved` or `rejected`, with the reviewer and reason given."""

    how: str
    decision: ApprovalDecision

    def __str__(self) -> str:
        said = self.decision
        by = f" by {said.reviewer}" if said.reviewer else ""
        why = f" ({said.reason})" if said.reason else ""
        return f"{self.how}{by}{why}"


async def taken(histories: Sequence[WorkflowHistory], converter: DataConverter, call_id: str) -> Taken | None:
    """The newest decision a run accepted on tool call `call_id`, read from its chain's `histories`."""
    for history in reversed(histories):
        for event in reversed(history.events):
            if not event.HasField("workflow_execution_update_accepted_event_attributes"):
                continue
            update = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
            if update.name not in _DECISIONS:
                continue
            try:
                [decision] = await converter.decode(update.args.payloads, [ApprovalDecision])
            except Exception:  # what does not decode as a decision is none the gate accepted
                continue
            if isinstance(decision, ApprovalDecision) and decision.call_id == call_id:
                return Taken(_DECISIONS[update.name], decision)
    return None
