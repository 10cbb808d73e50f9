"""The interface every model provider implements, and the errors it may raise.

The error classes decide retries: the model activity turns them into Temporal
`ApplicationError`s whose type is in (or out of) the retry policy's
non-retryable list, so Temporal, not the SDK, owns every retry.
"""

from __future__ import annotations

from typing import Literal, Protocol

from stalwart.activities.streaming import TurnObserver
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.errors import InfrastructureError
from stalwart.contracts.messages import AssistantTurn


class ModelProvider(Protocol):
    """Turns a conversation into the model's next assistant turn, all at once.

    The simplest provider to write; its text reaches clients word by word
    after the turn is complete (see `activities.providers.buffered`).
    """

    async def complete(self, context: ModelContext) -> AssistantTurn: ...


class StreamingModelProvider(Protocol):
    """A provider that reports text and tool calls to `observer` as the model generates them."""

    streaming: Literal[True]

    async def complete(self, context: ModelContext, observer: TurnObserver) -> AssistantTurn: ...


AnyModelProvider = ModelProvider | StreamingModelProvider


class ModelError(InfrastructureError):
    """Base of provider failures. `retryable` decides whether Temporal tries again."""

    retryable = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelConfigError(ModelError):
    """The agent's model settings cannot work (unknown provider, missing key): fix the agent file or the worker."""


class ModelRequestError(ModelError):
    """The provider refused the request for good (400, 401, 403, 404, context too long)."""


class ModelUnavailableError(ModelError):
    """The provider may answer later (429, 5xx, overloaded, timeouts, connection errors)."""

    retryable = True


class ModelGarbledError(ModelUnavailableError):
    """The provider answered with something that is not its API's response (binary junk, invalid UTF-8, not JSON).

    A proxy or load balancer in a bad state may heal, so it is retried, but briefly: `MAX_ATTEMPTS`
    attempts `RETRY_DELAY_SECONDS` apart, then the run stops with what came back.
    """

    MAX_ATTEMPTS = 3
    RETRY_DELAY_SECONDS = 1.0

    def __init__(self, message: str) -> None:
        super().__init__(message, retry_after=self.RETRY_DELAY_SECONDS)
