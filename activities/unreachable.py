"""Why a connection to a server failed, in words that say what to fix.

A network failure is retried (a blip passes), so while a run waits the failed attempt's message is all a person
has: "cannot connect" alone leaves them to guess between a misspelt host, a stopped server and a network that is
down. The cause is at the bottom of the exception's chain: the SDKs and httpx wrap the socket's error twice or more.
"""

from __future__ import annotations

import errno
import socket
from urllib.parse import urlsplit

from stalwart.activities.exception_chain import exception_chain


def unreachable(err: BaseException, url: str | None, setting: str) -> str | None:
    """`cannot resolve host 'x' ...` or `nothing accepts connections at x:port ...` when `err` failed so, else None.

    `setting` is what a person checks, e.g. "`base_url` in the agent file".
    """
    host, port = _host_and_port(url)
    for cause in exception_chain(err, past_from_none=True):
        if isinstance(cause, socket.gaierror):
            return (
                f"cannot resolve host {host!r} ({cause.strerror or cause}): check {setting}, and that the worker "
                "can look up names (its DNS)"
            )
        if isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED:
            return (
                f"nothing accepts connections at {host}:{port} (connection refused): check {setting}, and that the "
                "server there is running"
            )
    return None


def _host_and_port(url: str | None) -> tuple[str, int | str]:
    try:
        parts = urlsplit(url or "")
        port: int | str = parts.port or (443 if parts.scheme == "https" else 80)
        return parts.hostname or "?", port
    except ValueError:
        return "?", "?"
