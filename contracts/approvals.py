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


class ApprovalDecision(Contract):
    """The input of the `approve` and `reject` updates."""

    call_id: str
    reason: str | None = None
    reviewer: str | None = None
