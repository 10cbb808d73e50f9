"""Ending a process that used Temporal's client or worker without finalizing the interpreter under its threads.

Temporal's Rust core keeps threads that can call into Python while CPython finalizes, and a process whose work
is done then aborts with `Fatal Python error: PyGILState_Release` and exit code 134 (temporalio/sdk-python#300):
4 of 80 `stalwart approve` runs on a busy machine, a replay script now and then in CI. Skipping the teardown
avoids it. Whatever the process owned (dev server, worker, connections) is closed by the time its work returns,
so flushing the output and exiting at once loses nothing and keeps the exit code honest.

`stalwart` and its benchmarks end this way; a script of your own can too:

    from stalwart.workers.process_exit import run_then_exit

    run_then_exit(main())
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn


def exit_now(code: int) -> NoReturn:
    """Hand out the last log records and flush the output, then exit without finalizing the interpreter."""
    if "logging" in sys.modules:  # a process that logged
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that went away (`stalwart runs | head`)
            stream.flush()
    os._exit(code)


def run_then_exit(main: Coroutine[Any, Any, object]) -> NoReturn:
    """`asyncio.run(main)`, then `exit_now`: 0 when it returns, its code on `SystemExit`, 130 on Ctrl-C, and 1 with
    the traceback printed when it raises."""
    import asyncio  # here, not above: `stalwart` exits through `exit_now`, and its commands that read files need none

    try:
        asyncio.run(main)
    except SystemExit as stop:
        exit_now(_code_of(stop))
    except KeyboardInterrupt:
        exit_now(130)
    except BaseException:
        import traceback

        traceback.print_exc()
        exit_now(1)
    exit_now(0)


def _code_of(stop: SystemExit) -> int:
    """The exit code `sys.exit(arg)` would give: 0 for None, the int, else 1 with the argument printed."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1
