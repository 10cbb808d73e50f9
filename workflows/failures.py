"""Turning a Temporal failure chain into the one sentence a model or a person should read."""

from __future__ import annotations

import asyncio
import re

from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    RetryState,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)

from stalwart.contracts.activities import LONG_RATE_LIMIT
from stalwart.contracts.messages import ToolCall, ToolResult
from stalwart.contracts.tools import ToolSpec
from stalwart.workflows.policies import FAST_TOOL_SCHEDULE_TO_CLOSE, FAST_TOOL_TIMEOUT


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
    return joined(message, _gave_up(err))


def _gave_up(err: ActivityError) -> str | None:
    return _GAVE_UP.get(err.retry_state) if err.retry_state is not None else None


def joined(message: str, *more: str | None) -> str:
    """`message` and the sentences `more` (None left out) as one text: a message that does not end a sentence is
    ended with a period first ("... busy. Gave up ..."), not run into the next one."""
    said = message.rstrip()
    for sentence in more:
        if not sentence:
            continue
        if said and not said.endswith((".", "!", "?")):
            said += "."
        said = f"{said} {sentence}" if said else sentence
    return said


TOOL_TIMEOUT_HINT = (
    "The tool ran out of time, not your arguments: called the same way it will likely run out of time again. "
    "Ask it for less at once, or answer without it; a tool with side effects may still have done them, so check "
    "before calling it again."
)


def tool_failure(call: ToolCall, tool: ToolSpec, err: ActivityError) -> ToolResult:
    """What the model reads of a tool call whose activity failed for good. A timeout names the limit the call passed
    (a server's timeout says only "Timeout") and a hint that fits it, not the one about arguments; any other failure
    reads as `final_message` puts it. A cancellation is raised on, as by `message_unless_cancelled`."""
    message = message_unless_cancelled(err)
    limit = _timeout_passed(err, tool)
    if limit is None:
        return ToolResult.failure(call, message)
    return ToolResult.failure(call, joined(f"TimeoutError: {limit}", _gave_up(err)), TOOL_TIMEOUT_HINT)


def _timeout_passed(err: BaseException, tool: ToolSpec) -> str | None:
    """Which of the tool's limits a timeout at the bottom of `err`'s chain is, in words; None if it is none."""
    while err.__cause__ is not None and not isinstance(err, TimeoutError):
        err = err.__cause__
    if not isinstance(err, TimeoutError):
        return None
    seconds = tool.timeout_seconds
    fast_cap = FAST_TOOL_TIMEOUT.total_seconds()
    if err.type == TimeoutType.START_TO_CLOSE and tool.fast and seconds > fast_cap:
        return (
            f"the fast tool did not finish within {fast_cap:g} s, the longest a fast tool's attempt runs (its "
            f"timeout_seconds, {seconds:g} s, is cut to that)"
        )
    if err.type == TimeoutType.START_TO_CLOSE:
        return f"the tool did not finish within its timeout_seconds ({seconds:g} s)"
    if err.type == TimeoutType.SCHEDULE_TO_CLOSE and tool.fast:
        return (
            f"the fast tool's attempts did not finish within {FAST_TOOL_SCHEDULE_TO_CLOSE.total_seconds():g} s, "
            "the longest a fast tool's attempts run together"
        )
    if err.type == TimeoutType.HEARTBEAT:
        return (
            f"the worker running the tool sent no heartbeat for its heartbeat_timeout_seconds "
            f"({tool.heartbeat_timeout_seconds:g} s): the worker stopped, or the tool held up the worker's event loop "
            "(an async tool calling blocking code)"
        )
    return f"the tool call ran out of time ({err.type.name if err.type else 'timeout'})"


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
