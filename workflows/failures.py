"""Turning a Temporal failure chain into the one sentence a model or a person should read."""

from __future__ import annotations

import asyncio

from temporalio.exceptions import ApplicationError, is_cancelled_exception


def innermost_message(err: BaseException) -> str:
    """The message of the failure at the bottom of the chain, which is the one that names what went wrong."""
    while err.__cause__ is not None:
        err = err.__cause__
    if isinstance(err, ApplicationError) and err.type:
        return f"{err.type}: {err.message}"
    return str(err) or type(err).__name__


def message_unless_cancelled(err: BaseException) -> str:
    """Why an activity or child failed; a cancellation is raised on instead, since the run itself is being cancelled."""
    if is_cancelled_exception(err):
        raise asyncio.CancelledError() from err
    return innermost_message(err)
