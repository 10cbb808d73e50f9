"""A benchmark answers `--help`, and refuses an argument it does not take, before it loads anything heavy: the
Temporal SDK, the worker, a model SDK. Those imports take seconds (more on a loaded machine), which a reader
asking how to run a benchmark, or mistyping an option, should not wait for; the benchmarks load them where they
use them, after argparse. What each benchmark measures is checked by tests/test_benchmarks.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.repo_paths import REPO

BENCHMARKS = sorted(
    path.stem for path in (REPO / "bench").glob("*.py") if 'if __name__ == "__main__":' in path.read_text()
)
HEAVY = ("temporalio", "stalwart.workers", "stalwart.client.api", "openai", "anthropic", "pydantic_ai", "agents")
"""Packages a benchmark must not have imported by the time argparse is done with its arguments."""

_RUN_AND_LIST_HEAVY_IMPORTS = """
import runpy, sys
heavy = {heavy!r}
try:
    runpy.run_module("bench.{name}", run_name="__main__", alter_sys=True)
finally:
    print("imported:", sorted(name for name in sys.modules if name in heavy))
"""


def _parsed_only(name: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    script = _RUN_AND_LIST_HEAVY_IMPORTS.format(name=name, heavy=HEAVY)
    return subprocess.run(
        [sys.executable, "-c", script, *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_there_are_benchmarks_to_check():
    assert "step_cost" in BENCHMARKS and "peers" in BENCHMARKS


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_benchmark_answers_help_before_importing_the_sdk(name: str):
    ran = _parsed_only(name, "--help")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"usage: {name}.py "), ran.stdout
    assert ran.stdout.rstrip().splitlines()[-1] == "imported: []"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_benchmark_refuses_an_unknown_option_before_importing_the_sdk(name: str):
    ran = _parsed_only(name, "--no-such-option")
    assert ran.returncode == 2
    assert "unrecognized arguments: --no-such-option" in ran.stderr
    assert ran.stdout.rstrip().splitlines()[-1] == "imported: []"
