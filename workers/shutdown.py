"""How `stalwart worker` stops on SIGTERM (or Ctrl-C): drain within a grace period, then exit, in every state.

The Temporal worker stops polling at once and gives in-flight activities `grace_seconds` to finish
(`graceful_shutdown_timeout`); then it cancels them. A cancelled model call closes its stream, a cancelled
tool call its handler (an MCP server still in its handshake is stopped), and Temporal retries each
elsewhere, with its idempotency key unchanged. Two things could still keep the process alive, and are
bounded here:

- an activity that ignores its cancellation: a watchdog exits the process `DRAIN_MARGIN_SECONDS` after
  the grace period, saying so;
- a synchronous tool still running in its thread (a thread cannot be cancelled, and Python waits for it
  at exit): once the worker has drained, the process exits without waiting for it.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import TextIO

from stalwart.workers.process_exit import exit_now

DEFAULT_GRACE_SECONDS = 10.0
DRAIN_MARGIN_SECONDS = 15.0
"""After the grace period, how long cancelled activities and the worker's own cleanup may take."""
EXECUTOR_SECONDS = 2.0
"""How long idle tool threads get to end once the worker has drained."""
EXIT_TERMINATED = 143


class Shutdown:
    """The stop of one worker process: `begin` when the worker's block is cancelled, `finish` after it."""

    def __init__(self, grace_seconds: float, out: TextIO = sys.stderr) -> None:
        self.grace_seconds = grace_seconds
        self.out = out
        self._started: float | None = None
        self._watchdog: threading.Timer | None = None

    def begin(self) -> None:
        self._started = time.monotonic()
        limit = self.grace_seconds + DRAIN_MARGIN_SECONDS
        print(
            f"stopping: no new work is taken; running activities get {self.grace_seconds:g}s to finish, then are "
            f"cancelled (Temporal retries them elsewhere); the process exits within {limit:g}s",
            file=self.out,
            flush=True,
        )
        self._watchdog = threading.Timer(limit, self._give_up)
        self._watchdog.daemon = True
        self._watchdog.start()

    async def finish(self) -> None:
        """After the worker's block: exit now if a tool thread outlives the drain (else let the process end)."""
        if self._started is None:
            return
        if self._watchdog is not None:
            self._watchdog.cancel()
        took = time.monotonic() - self._started
        loop = asyncio.get_running_loop()
        done, _ = await asyncio.wait(
            {asyncio.ensure_future(loop.shutdown_default_executor())}, timeout=EXECUTOR_SECONDS
        )
        if done:
            print(f"stopped: drained in {took:.1f}s", file=self.out, flush=True)
            return
        busy = [
            t.name
            for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and "_do_shutdown" not in t.name
        ]
        print(
            f"stopped: drained in {took:.1f}s; not waiting for tool threads still running ({', '.join(busy)}): "
            f"a synchronous tool cannot be interrupted, and its call is retried elsewhere",
            file=self.out,
            flush=True,
        )
        exit_now(EXIT_TERMINATED)

    def _give_up(self) -> None:
        print(
            f"stopping: activities did not end within {self.grace_seconds + DRAIN_MARGIN_SECONDS:g}s of the stop "
            f"(one ignores its cancellation); exiting now. Temporal retries them once their heartbeat times out.",
            file=self.out,
            flush=True,
        )
        exit_now(EXIT_TERMINATED)
