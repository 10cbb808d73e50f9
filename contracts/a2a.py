"""Inputs and outputs of the A2A activities: delegating to a remote agent by URL, and describing it.

Only Stalwart's own view of the remote agent is kept here (name, skills, the
answer's text and state), not the A2A wire shapes, so a history stays readable
and does not change when the protocol does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from stalwart.contracts import failure_types
from stalwart.contracts.model import Contract

DelegationState = Literal["completed", "input-required"]
"""How a delegation that produced an answer ended: done, or the remote agent asks a question back."""


class A2APollSettings(Contract):
    """How to follow a remote task: the first wait, how it grows, its ceiling, and each HTTP call's limit."""

    model_config = ConfigDict(allow_inf_nan=False)

    interval_seconds: float = Field(1.0, gt=0, le=3600, description="Wait before the first `tasks/get`.")
    max_interval_seconds: float = Field(10.0, gt=0, le=3600, description="Longest wait between two polls.")
    backoff: float = Field(1.5, ge=1, le=10, description="Each wait is the previous one times this, up to the ceiling.")
    request_timeout_seconds: float = Field(
        30.0, gt=0, le=3600, description="Limit of one HTTP request; a timeout is retried."
    )


class A2ADelegateRequest(Contract):
    """Send one task to a remote agent and wait for its answer.

    `idempotency_key` becomes the A2A `messageId`: it must be stable across
    retries of one delegation (e.g. `<workflow id>/<step>/<call id>`), so a
    remote agent that deduplicates messages sees a retry as the same message.
    """

    url: str = Field(description="The agent's base URL (its card is under /.well-known/) or the URL of its card.")
    task: str = Field(description="What the remote agent is asked, as the text of one user message.")
    idempotency_key: str = Field(min_length=1)
    context_id: str | None = Field(None, description="Continue an earlier conversation with this agent.")
    task_id: str | None = Field(None, description="Answer a task of this agent that ended `input-required`.")
    auth_token_env: str | None = Field(
        None, description="Worker environment variable holding a bearer token for the agent."
    )
    poll: A2APollSettings = Field(default_factory=A2APollSettings)
    deadline: datetime | None = Field(
        None, description="When the delegating run's wall-clock budget ends; no attempt starts after it."
    )


class A2ADelegateResult(Contract):
    """The remote agent's answer.

    A reply that came as a plain A2A Message has no task: `task_id` is None and
    `state` is `completed`. With `input-required`, `text` is the agent's
    question; send the answer with the same `context_id` and `task_id`.
    """

    text: str
    task_id: str | None = None
    context_id: str | None = None
    state: DelegationState = "completed"
    agent_name: str


class A2ADescribeRequest(Contract):
    """Fetch a remote agent's card."""

    url: str = Field(description="The agent's base URL or the URL of its card.")
    auth_token_env: str | None = None
    request_timeout_seconds: float = Field(30.0, gt=0, le=3600, allow_inf_nan=False)


class A2ASkill(Contract):
    """One skill a remote agent advertises on its card."""

    id: str
    name: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class A2AAgentCard(Contract):
    """What Stalwart needs from a remote agent's card: how to describe it to a model and where to call it."""

    name: str
    description: str = ""
    version: str = ""
    skills: list[A2ASkill] = Field(default_factory=list)
    card_url: str = Field(description="Where the card was found.")
    endpoint: str = Field(description="The agent's JSON-RPC URL.")
    protocol_version: str = Field(description="The A2A version spoken at `endpoint`, e.g. `1.0` or `0.3.0`.")

    def summary(self) -> str:
        """A plain-text description for a prompt or a tool description: who the agent is and what it can do."""
        lines = [f"{self.name}: {self.description}".rstrip(": ")]
        for skill in self.skills:
            line = f"- {skill.name}"
            if skill.description:
                line += f": {skill.description}"
            if skill.examples:
                line += f" (e.g. {'; '.join(skill.examples[:2])})"
            lines.append(line)
        return "\n".join(lines)


A2A_DELEGATE = "a2a_delegate"
"""Activity: `A2ADelegateRequest` -> `A2ADelegateResult`."""
A2A_DESCRIBE = "a2a_describe"
"""Activity: `A2ADescribeRequest` -> `A2AAgentCard`."""

# The A2A activities' failure types, under the names the workflow's retry policy imports them by.
UNAVAILABLE_ERROR = failure_types.A2A_UNAVAILABLE
PROTOCOL_ERROR = failure_types.A2A_PROTOCOL
REQUEST_ERROR = failure_types.A2A_REQUEST
TASK_ERROR = failure_types.A2A_TASK
