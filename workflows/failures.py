"""Turning a Temporal failure chain into the one sentence a model or a person should read."""

from __future__ import annotations

import asyncio

from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

from stalwart.contracts.activities import LONG_RATE_LIMIT


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


def long_rate_limit(err: ActivityError) -> tuple[float, str] | None:
    """(seconds to wait, provider) when the provider asked for a wait too long for the activity's own retry."""
    cause = err.cause
    if not (isinstance(cause, ApplicationError) and cause.type == LONG_RATE_LIMIT):
        return None
    details = cause.details
    try:
        return float(details[0]), str(details[1])
    except (IndexError, TypeError, ValueError):
        return None
