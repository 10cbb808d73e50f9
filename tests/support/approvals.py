"""Waiting for a run to ask for a person's approval."""

from __future__ import annotations

import asyncio

from stalwart.client.api import RunHandle
from stalwart.contracts.approvals import PendingApproval


async def until_pending(handle: RunHandle) -> list[PendingApproval]:
    """The run's calls waiting for approval, as soon as there is one."""
    while not (pending := await handle.pending_approvals()):
        await asyncio.sleep(0.05)
    return pending
