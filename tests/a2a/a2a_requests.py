"""Delegation requests as the A2A tests send them: fresh idempotency keys, fast polling."""

from __future__ import annotations

import uuid
from typing import Any

from stalwart.contracts.a2a import A2ADelegateRequest, A2APollSettings

FAST_POLL = A2APollSettings(interval_seconds=0.05, max_interval_seconds=0.2, request_timeout_seconds=10)


def delegate(url: str, task: str = "summarise qubits", *, key: str | None = None, **fields: Any) -> A2ADelegateRequest:
    """A delegation of `task` to the agent at `url`; `key` (default: a fresh one per call) is its idempotency key."""
    return A2ADelegateRequest(
        url=url, task=task, idempotency_key=key or f"wf-1/1/call-{uuid.uuid4().hex[:8]}", poll=FAST_POLL, **fields
    )
