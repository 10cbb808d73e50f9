"""Human approval of tool calls: what is waiting, and what a reviewer decided."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from stalwart.contracts.model import Contract


class PendingApproval(Contract):
    """A tool call that waits for a person before it runs."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    step: int
    requested_at: datetime
    expires_at: datetime


MAX_REASON_CHARS = 10_000
"""A decision's reason goes to the model as the refused call's result, and into history: a few paragraphs at most."""
MAX_REVIEWER_CHARS = 200


class ApprovalDecision(Contract):
    """The input of the `approve` and `reject` updates."""

    call_id: str
    reason: str | None = None
    reviewer: str | None = None


def decision_problem(decision: ApprovalDecision) -> str | None:
    """Why a decision is refused before it reaches the run, if it is: a reason or reviewer too long to record."""
    if len(decision.reason or "") > MAX_REASON_CHARS:
        return f"the reason has {len(decision.reason or ''):,} characters, over {MAX_REASON_CHARS:,}: shorten it"
    if len(decision.reviewer or "") > MAX_REVIEWER_CHARS:
        return f"the reviewer has {len(decision.reviewer or ''):,} characters, over {MAX_REVIEWER_CHARS:,}: shorten it"
    return None
