"""The socket a server of the command line listens on (`stalwart serve`, `stalwart codec-server`), opened before
the server starts: a port in use or a host that does not resolve is said first, naming the option to change."""

from __future__ import annotations

import socket

from stalwart.contracts.errors import UsageError


def listening(host: str, port: int, *, server: str, port_flag: str = "--port") -> socket.socket:
    """A socket listening on `host:port`, or a `UsageError` saying which of --host and `port_flag` to change.

    It listens at once: from then on a caller waits in the backlog until the server accepts it, never refused."""
    if not 1 <= port <= 65535:
        raise UsageError(f"{port} is not a port number: give one from 1 to 65535 ({port_flag})")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except OSError as err:
        raise UsageError(f"{server} cannot listen on {host}:{port} ({err.strerror or err}): check --host") from None
    listener = socket.socket(family)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(2048)
    except OSError as err:
        listener.close()
        raise UsageError(
            f"{server} cannot listen on {host}:{port} ({err.strerror or err}): choose another {port_flag}"
        ) from None
    return listener
