"""The delay a server asks for before a retry, read from its response headers.

Shared by the model providers and the A2A transport; it takes any mapping of
lower-case header names, so it needs no HTTP library.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` in seconds or as an HTTP date;
    None when absent, past or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return _positive(float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return _positive(float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _positive((when - datetime.now(UTC)).total_seconds())


def _positive(seconds: float) -> float | None:
    return seconds if seconds > 0 else None
