"""`stalwart serve`: the HTTP API for apps and the page for people (client/serve/, docs/serve.md)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import signal
import sys
from pathlib import Path

from stalwart.client.commands import EXIT_OK
from stalwart.client.listening import listening
from stalwart.contracts.errors import UsageError

TOKEN_VAR = "STALWART_SERVE_TOKEN"
ORIGINS_VAR = "STALWART_SERVE_ORIGINS"


def loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from stalwart.client.codec_server import checked_origin
    from stalwart.client.commands import connecting
    from stalwart.client.serve.app import ServeSettings, serve_app

    token = os.environ.get(TOKEN_VAR) or None
    if token is None and not loopback(args.host):
        raise UsageError(
            f"--host {args.host} would let anyone who reaches this machine start runs and approve tool calls: "
            f"set {TOKEN_VAR} to a secret that callers send as `Authorization: Bearer <token>`, "
            "or serve on the loopback (--host 127.0.0.1)"
        )
    if args.max_body_bytes < 1024:
        raise UsageError(f"--max-body-bytes {args.max_body_bytes} is too small to carry a message: give 1024 or more")
    given = args.origin or [o for o in os.environ.get(ORIGINS_VAR, "").split(",") if o.strip()]
    origins = [checked_origin(o) for o in given]
    listener = listening(args.host, args.port, server="stalwart serve")  # said before connecting
    client = await connecting.client(args)
    agents_dir = Path(args.agents_dir).expanduser().resolve()
    if not agents_dir.is_dir():
        raise UsageError(f"--agents-dir {args.agents_dir} is not a folder: name the folder of your agent files")
    settings = ServeSettings(token=token, origins=origins, max_body_bytes=args.max_body_bytes, agents_dir=agents_dir)
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"serving the page on http://{shown_host}:{args.port}/ and the API under /api", file=sys.stderr)
    if token is None:
        print(
            f"no {TOKEN_VAR}: listening on the loopback only, without a token (anyone on this machine may call)",
            file=sys.stderr,
        )
    else:
        print("callers send `Authorization: Bearer <token>` (the page asks for it once)", file=sys.stderr)
    if origins:
        print(f"other web origins allowed: {', '.join(origins)}", file=sys.stderr)
    print(f"agent files are read from {agents_dir}", file=sys.stderr)
    print(f"runs on task queue {client.task_queue!r}; Temporal UI links go to {client.ui_url}", file=sys.stderr)
    # Open event streams would hold a shutdown forever: they are cut after a moment, and their clients resume
    # from their last offset when the server is back.
    app = serve_app(client, settings)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
    # uvicorn stops gracefully on SIGTERM itself, then raises the signal again for its default end (exit 143). The
    # command line's own handler would also cancel this command mid-shutdown, which printed the lifespan's
    # CancelledError as a traceback.
    asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
    await uvicorn.Server(config).serve(sockets=[listener])
    return EXIT_OK
