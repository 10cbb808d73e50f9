"""Turning a Temporal failure chain into the one sentence a model or a person should read."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError


def innermost_message(err: BaseException) -> str:
    """The message of the failure at the bottom of the chain, which is the one that names what went wrong."""
    while err.__cause__ is not None:
        err = err.__cause__
    if isinstance(err, ApplicationError) and err.type:
        return f"{err.type}: {err.message}"
    return str(err) or type(err).__name__
