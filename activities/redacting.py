"""Where text leaves an activity: the worker's secrets (`activities/secrets.py`) redacted from every activity's
result, failure and heartbeat details, and from the process's log records, from the worker's first activity on.

Kept apart from `secrets` so that `stalwart check`, which asks `secrets` which variables are allowed,
does not import the Temporal worker.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from temporalio.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from stalwart.activities import secrets
from stalwart.activities.secrets import contains_secret, redact, redact_value, redacted_error
from stalwart.contracts.stream import StreamProgress


class RedactingInterceptor(Interceptor):
    """Redacts the worker's secrets from every activity's result, failure and heartbeat details.

    Made with its worker, it first learns every secret the worker's environment holds
    (`secrets.remember_environment`), so the first activity is redacted as fully as the last: a tool
    result holding a provider key is redacted before anything has called that provider."""

    def __init__(self) -> None:
        secrets.remember_environment()

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _RedactingInbound(next)


class _RedactingInbound(ActivityInboundInterceptor):
    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        super().init(_RedactingOutbound(outbound))

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            result = await self.next.execute_activity(input)
        except Exception as err:
            cleaned = redacted_error(err)
            if cleaned is err:
                raise
            raise cleaned from None
        return redact_value(result)


class _RedactingOutbound(ActivityOutboundInterceptor):
    def heartbeat(self, *details: Any) -> None:
        self.next.heartbeat(*(_heartbeat_detail(detail) for detail in details))


def _heartbeat_detail(detail: Any) -> Any:
    """A heartbeat detail, redacted. The streamed answer also holds back an ending that may be the start of a
    key (the client reads the whole answer from the result when the run ends); other details, such as a
    remote task's id to resume, are only redacted where a whole secret appears."""
    if isinstance(detail, StreamProgress):
        text = redact(detail.text, partial_tail=True) if secrets.known() else detail.text
        return detail if text == detail.text else detail.model_copy(update={"text": text})
    return redact_value(detail)


@dataclass
class _RedactingFactory:
    """A log record factory that redacts the message, its arguments and its traceback before any handler sees it."""

    inner: Any

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        if not secrets.known():
            return record
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's to report
            return record
        if contains_secret(message):
            record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            if contains_secret(text):
                record.exc_text = redact(text)
                record.exc_info = None
        return record


def install_log_redaction() -> None:
    """Redact secrets from every log record of this process (idempotent)."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _RedactingFactory):
        logging.setLogRecordFactory(_RedactingFactory(current))
