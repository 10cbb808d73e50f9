"""A process that used Temporal ends without finalizing the interpreter under the core's threads, and loses nothing
by it: what it printed and logged gets out, and its exit code says how its work ended (workers/process_exit.py).
Whether finalizing would have aborted it is up to thread timing, so these hold the exit to its contract instead.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from support.fresh_python import printed_by


def _script(body: str) -> subprocess.CompletedProcess[str]:
    """`body`, the inside of `async def main()`, run by `run_then_exit` in a fresh interpreter."""
    script = "from stalwart.workers.process_exit import run_then_exit\nasync def main():\n"
    script += textwrap.indent(textwrap.dedent(body), "    ") + "\nrun_then_exit(main())\n"
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd="/"
    )


def test_a_script_that_returns_exits_0_with_its_unflushed_output_out():
    ended = _script('import sys; sys.stdout.write("no newline, no flush"); sys.stderr.write("nor here")')
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "no newline, no flush", "nor here")


def test_a_script_that_raises_exits_1_with_its_traceback():
    ended = _script('raise LookupError("the run is not there")')
    assert ended.returncode == 1
    assert "Traceback" in ended.stderr and "LookupError: the run is not there" in ended.stderr


@pytest.mark.parametrize(
    ("exit_with", "code", "said"), [("3", 3, ""), ("None", 0, ""), ("'no such run'", 1, "no such run")]
)
def test_a_script_that_calls_sys_exit_exits_as_sys_exit_would(exit_with, code, said):
    ended = _script(f"import sys; sys.exit({exit_with})")
    assert (ended.returncode, ended.stderr.strip()) == (code, said)


def test_a_script_interrupted_exits_130():
    ended = _script("raise KeyboardInterrupt")
    assert ended.returncode == 130


def test_log_records_still_held_by_a_handler_are_handed_out():
    """A buffering handler (here one that holds every record until it is flushed) writes them at logging's
    shutdown, which the interpreter's teardown would have run."""
    printed = printed_by(
        """
        import logging, logging.handlers, sys
        from stalwart.workers.process_exit import exit_now
        held = logging.handlers.MemoryHandler(capacity=1000, target=logging.StreamHandler(sys.stdout))
        logging.getLogger("held").addHandler(held)
        logging.getLogger("held").warning("the last record")
        exit_now(0)
        """
    )
    assert printed == "the last record"


def test_the_stalwart_executable_ends_this_way_without_loading_asyncio_when_it_needs_none():
    """`stalwart` alone prints its help and exits through `exit_now`, which leaves asyncio unloaded: a command
    that needs no event loop starts without it (`bench.cli_start` times them)."""
    probe = textwrap.dedent(
        """
        import sys
        import stalwart.workers.process_exit as process_exit
        from stalwart.client import cli
        real = process_exit.exit_now
        def reporting(code):
            print("exit", code, "asyncio" in sys.modules)
            real(code)
        process_exit.exit_now = reporting
        sys.argv = ["stalwart"]
        cli.console_main()
        """
    )
    ended = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert (ended.returncode, ended.stdout.splitlines()[-1]) == (2, "exit 2 False")
