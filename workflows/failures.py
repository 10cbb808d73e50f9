"""Turning a Temporal failure chain into the one sentence a model or a person should read."""

from __future__ import annotations

import asyncio
import re

from temporalio.exceptions import ActivityError, ApplicationError, RetryState, is_cancelled_exception

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
    return final_message(err)


_RETRY_PROMISE = re.compile(
    r"\s*[;,]\s*(?:the attempt is retried|retrying(?: after the [0-9.]+s it asked for| with backoff| later)?)\s*\."
)
_GAVE_UP = {
    RetryState.MAXIMUM_ATTEMPTS_REACHED: "Gave up after the last attempt the retry policy allows.",
    RetryState.TIMEOUT: "Gave up: the time allowed for the call and its retries ran out.",
}


def final_message(err: BaseException) -> str:
    """The failure as it reads once retries are over: an attempt's "the attempt is retried" or "retrying after
    ..." is no longer true, so it is dropped, and an activity that ran out of attempts or time says so."""
    message = innermost_message(err)
    if not isinstance(err, ActivityError):
        return message
    message = without_retry_promise(message)
    gave_up = _GAVE_UP.get(err.retry_state) if err.retry_state is not None else None
    return f"{message} {gave_up}" if gave_up else message


def without_retry_promise(message: str) -> str:
    """An attempt's failure as it reads once no attempt follows: its "the attempt is retried" or "retrying after
    ..." dropped."""
    return _RETRY_PROMISE.sub(".", message)


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
