"""The ways a delegation can fail, each with the retry decision Temporal should take.

Class names are the `ApplicationError` types listed in `policy`, so the
workflow's retry policy and this module agree on what is worth retrying.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

from stalwart.contracts.errors import InfrastructureError


class A2AError(InfrastructureError):
    """Base of A2A failures; the message names the cause and what to do about it."""

    retryable = False

    def __init__(self, message: str, *, retry_after: float | None = None, rpc_code: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.rpc_code = rpc_code
        """The JSON-RPC error code, when the agent answered one."""

    def to_application_error(self) -> ApplicationError:
        """The error Temporal sees: retried or not by its type, after Retry-After when the agent gave one."""
        return ApplicationError(
            str(self),
            type=type(self).__name__,
            non_retryable=not self.retryable,
            next_retry_delay=timedelta(seconds=self.retry_after) if self.retry_after else None,
        )


class A2AUnavailableError(A2AError):
    """The agent may answer later: connection refused or reset, timeout, HTTP 408, 429 or 5xx."""

    retryable = True


class A2AProtocolError(A2AError):
    """The agent's card or reply is not valid A2A, or it answered with a JSON-RPC error."""


class A2ARequestError(A2AError):
    """The agent refused the request for good (HTTP 4xx), or there is no agent card at the URL."""


class A2ATaskError(A2AError):
    """The remote task ended without an answer: failed, rejected, canceled, or it needs authentication."""
