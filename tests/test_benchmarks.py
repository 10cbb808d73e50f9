"""Every benchmark of `bench/` still runs and ends with its ratio line.

The benchmarks are how issue 14's targets are measured, and nothing else runs them: a change to the worker, the
client or a contract could break one unnoticed until the next person measures. Each runs here at a size that
only proves it works end to end (its figures at this size mean nothing, and no test judges them: the README of
`bench/` gives the measured ones and the commands that produced them).
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stalwart.activities.storage.config import STORAGE_VAR

from support.head_start import Pool, head_start
from support.repo_paths import REPO

RATIO_LINE = re.compile(r"^ratio: (\S+)", re.MULTILINE)

SMALLEST_RUNS = {
    "step_cost": ["--turns", "2", "--repeat", "1"],
    "history_growth": ["--turns", "2", "4"],
    "model_turn": ["--turns", "1"],
    "session_growth": ["--turns", "1", "2", "--idle", "2", "--low-events", "100", "--settle", "0"],
    "concurrency": ["--runs", "1", "--latency", "0"],
    "first_token": ["--samples", "1", "--pause", "0.01", "--poll", "0.02"],
    "cli_start": ["--repeat", "1"],
    "server_cost": ["--runs", "1", "--latency", "0", "--settle", "0"],
    "peers": ["--calls", "2", "--rounds", "1", "--growth", "3"],
}
PEERS_INSTALLED = all(importlib.util.find_spec(name) for name in ("temporalio.openai_agents", "pydantic_ai"))
"""The `peers` extra, which CI does not install: without it `bench.peers` measures Stalwart alone and its ratio is
`none` (tested below)."""


def test_every_benchmark_of_bench_is_run_here():
    modules = {path.stem for path in (REPO / "bench").glob("*.py") if _is_benchmark(path.read_text())}
    assert modules == set(SMALLEST_RUNS)


def _is_benchmark(source: str) -> bool:
    return 'if __name__ == "__main__":' in source


def test_every_number_a_benchmark_takes_is_checked_before_it_runs():
    unchecked = {
        path.name: found
        for path in (REPO / "bench").glob("*.py")
        if (found := re.findall(r"type=(?:int|float)\b", path.read_text()))
    }
    assert unchecked == {}, "give the option `type=count` or `type=seconds` (bench/options.py)"


@pytest.mark.parametrize(
    ("benchmark", "arguments", "refusal"),
    [
        ("step_cost", ["--repeat", "0"], "argument --repeat: 0 measures nothing: give 1 or more"),
        ("step_cost", ["--turns", "1"], "argument --turns: 1 measures nothing: give 2 or more"),
        ("history_growth", ["--turns", "5", "2.5"], "argument --turns: '2.5' is not a whole number: give 1 or more"),
        ("first_token", ["--pause", "-1"], "argument --pause: -1 is not a duration: give 0 or more seconds"),
        ("concurrency", ["--latency", "nan"], "argument --latency: nan is not a duration: give 0 or more seconds"),
    ],
)
def test_a_benchmark_refuses_a_size_that_measures_nothing_before_starting_a_server(
    benchmark: str, arguments: list[str], refusal: str
):
    ran = subprocess.run(
        [sys.executable, "-m", f"bench.{benchmark}", *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert ran.returncode == 2
    # argparse's usage line: refused while parsing, before `main` could start a server
    assert ran.stderr.startswith(f"usage: {benchmark}.py ")
    assert refusal in ran.stderr
    assert ran.stdout == ""  # nothing was measured


BENCHMARK_RUNS = Pool("benchmark-runs", at_once=2, from_collection=False)
"""The smoke runs of the tests below, two at a time from the first of them (support/head_start.py): each keeps about
one core busy (its worker, its dev server), and one after another they took a minute."""


@dataclass(frozen=True)
class Run:
    """A benchmark's command, run in `cwd` with `env` (None: this process's environment)."""

    argv: list[str]
    cwd: Path = REPO
    env: dict[str, str] | None = None

    def __call__(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv, cwd=self.cwd, env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL
        )


SMOKE_RUNS = {
    benchmark: head_start(Run([sys.executable, "-m", f"bench.{benchmark}", *arguments]), BENCHMARK_RUNS)
    for benchmark, arguments in SMALLEST_RUNS.items()
}


def _without_the_peers() -> subprocess.CompletedProcess[str]:
    hide_the_peers = (
        "import runpy, sys; sys.modules.update(agents=None, pydantic_ai=None); "
        "runpy.run_module('bench.peers', run_name='__main__', alter_sys=True)"
    )
    return Run([sys.executable, "-c", hide_the_peers, *SMALLEST_RUNS["peers"]])()


def _without_a_storage_setting() -> tuple[subprocess.CompletedProcess[str], list[Path]]:
    """`concurrency` run in a scratch folder where STALWART_STORAGE is unset, and what it left in that folder: the
    default storage is under its `data`."""
    with tempfile.TemporaryDirectory(prefix="stalwart-storage-unset-") as scratch:
        folder = Path(scratch)
        env = {name: value for name, value in os.environ.items() if name != STORAGE_VAR}
        (folder / "data").mkdir()
        env["XDG_DATA_HOME"] = str(folder / "data")  # the default storage is $XDG_DATA_HOME/stalwart/storage
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        ran = Run([sys.executable, "-m", "bench.concurrency", *SMALLEST_RUNS["concurrency"]], cwd=folder, env=env)()
        return ran, [path.relative_to(folder) for path in folder.rglob("*")]


WITHOUT_THE_PEERS = head_start(_without_the_peers, BENCHMARK_RUNS)
WITHOUT_A_STORAGE_SETTING = head_start(_without_a_storage_setting, BENCHMARK_RUNS)


def _smoke_test(benchmark: str) -> Any:
    if benchmark == "peers" and not PEERS_INSTALLED:
        return pytest.param(benchmark, marks=pytest.mark.skip(reason="no peers extra"))
    return pytest.param(benchmark, marks=pytest.mark.head_start(SMOKE_RUNS[benchmark]))


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", [_smoke_test(name) for name in sorted(SMALLEST_RUNS)])
def test_benchmark_runs_and_prints_its_ratio(benchmark: str, head_start_result: subprocess.CompletedProcess[str]):
    ran = head_start_result
    assert ran.returncode == 0, f"bench.{benchmark} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    ratios = RATIO_LINE.findall(ran.stdout)
    assert len(ratios) == 1, f"bench.{benchmark} printed {len(ratios)} ratio lines:\n{ran.stdout[-3000:]}"
    ratio = float(ratios[0])
    assert math.isfinite(ratio) and ratio > 0
    assert ran.stdout.rstrip().splitlines()[-1].startswith("ratio: "), "the ratio is the last line a reader sees"


@pytest.mark.slow
@pytest.mark.head_start(WITHOUT_THE_PEERS)
def test_the_peers_benchmark_without_the_peers_measures_stalwart_and_says_how_to_install_them(
    head_start_result: subprocess.CompletedProcess[str],
):
    ran = head_start_result
    assert ran.returncode == 0, f"bench.peers failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    rows = ran.stdout.rstrip().splitlines()
    assert any(re.match(r" *stalwart: +[\d.]+ ms per step", row) for row in rows), ran.stdout
    for peer in ("openai-agents", "pydantic-ai"):
        assert any(re.match(rf" *{peer}: skipped, not installed .*pip install -e '\.\[peers\]'", row) for row in rows)
    assert rows[-1] == "ratio: none (no peer installed: pip install -e '.[peers]')"


@pytest.mark.slow
@pytest.mark.head_start(WITHOUT_A_STORAGE_SETTING)
def test_a_benchmark_leaves_no_conversations_in_the_default_storage(
    head_start_result: tuple[subprocess.CompletedProcess[str], list[Path]],
):
    """Run where STALWART_STORAGE is unset, a benchmark writes to a scratch folder beside the default one, on the
    same disk, and removes it: measuring for a day used to leave hundreds of megabytes in the default storage.

    `concurrency` is the quickest of the benchmarks whose runs write conversations: every benchmark that runs a
    worker takes its scratch folder from `bench.harness.scratch_storage`."""
    ran, left = head_start_result
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert RATIO_LINE.search(ran.stdout)
    assert left == [Path("data")]  # no conversations, and no empty `stalwart/` folder either
