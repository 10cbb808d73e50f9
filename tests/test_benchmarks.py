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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from stalwart.activities.storage.config import STORAGE_VAR

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


RUNS_AT_ONCE = 2
"""Benchmark runs this module keeps going at once: each keeps about one core busy (its worker, its dev server), and
the smoke runs of the tests below, one after another, took a minute."""


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


class SmokeRuns:
    """The benchmark runs of the tests of this module that this pytest session runs, `RUNS_AT_ONCE` at a time from
    the first test that asks for one, in the tests' order; each test waits for its own and checks it."""

    def __init__(self, runs: dict[str, Run]) -> None:
        self.runs = runs
        self._pool = ThreadPoolExecutor(max_workers=RUNS_AT_ONCE)
        self._done = {name: self._pool.submit(run) for name, run in runs.items()}

    def __getitem__(self, name: str) -> subprocess.CompletedProcess[str]:
        return self._done[name].result()

    def close(self) -> None:
        """Start no more runs (one already going finishes: a benchmark stops its own dev server)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def _smoke_run(benchmark: str) -> Run:
    return Run([sys.executable, "-m", f"bench.{benchmark}", *SMALLEST_RUNS[benchmark]])


def _without_the_peers() -> Run:
    hide_the_peers = (
        "import runpy, sys; sys.modules.update(agents=None, pydantic_ai=None); "
        "runpy.run_module('bench.peers', run_name='__main__', alter_sys=True)"
    )
    return Run([sys.executable, "-c", hide_the_peers, *SMALLEST_RUNS["peers"]])


def _without_a_storage_setting(folder: Path) -> Run:
    """`concurrency` run in `folder` where STALWART_STORAGE is unset: the default storage is under `folder/data`."""
    env = {name: value for name, value in os.environ.items() if name != STORAGE_VAR}
    (folder / "data").mkdir()
    env["XDG_DATA_HOME"] = str(folder / "data")  # the default storage is $XDG_DATA_HOME/stalwart/storage
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return Run([sys.executable, "-m", "bench.concurrency", *SMALLEST_RUNS["concurrency"]], cwd=folder, env=env)


@pytest.fixture(scope="module")
def smoke_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmokeRuns]:
    """The runs of the tests selected in this module, started together at the first of them."""
    runs: dict[str, Run] = {}
    for item in request.session.items:
        if not isinstance(item, pytest.Function) or item.module is not request.module:
            continue
        if item.originalname == test_benchmark_runs_and_prints_its_ratio.__name__:
            benchmark = item.callspec.params["benchmark"]
            if benchmark != "peers" or PEERS_INSTALLED:
                runs[benchmark] = _smoke_run(benchmark)
        elif (
            item.originalname
            == test_the_peers_benchmark_without_the_peers_measures_stalwart_and_says_how_to_install_them.__name__
        ):
            runs[item.originalname] = _without_the_peers()
        elif item.originalname == test_a_benchmark_leaves_no_conversations_in_the_default_storage.__name__:
            runs[item.originalname] = _without_a_storage_setting(tmp_path_factory.mktemp("storage-unset"))
    smoke = SmokeRuns(runs)
    yield smoke
    smoke.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "benchmark",
    [
        pytest.param(name, marks=pytest.mark.skipif(name == "peers" and not PEERS_INSTALLED, reason="no peers extra"))
        for name in sorted(SMALLEST_RUNS)
    ],
)
def test_benchmark_runs_and_prints_its_ratio(benchmark: str, smoke_runs: SmokeRuns):
    ran = smoke_runs[benchmark]
    assert ran.returncode == 0, f"bench.{benchmark} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    ratios = RATIO_LINE.findall(ran.stdout)
    assert len(ratios) == 1, f"bench.{benchmark} printed {len(ratios)} ratio lines:\n{ran.stdout[-3000:]}"
    ratio = float(ratios[0])
    assert math.isfinite(ratio) and ratio > 0
    assert ran.stdout.rstrip().splitlines()[-1].startswith("ratio: "), "the ratio is the last line a reader sees"


@pytest.mark.slow
def test_the_peers_benchmark_without_the_peers_measures_stalwart_and_says_how_to_install_them(smoke_runs: SmokeRuns):
    ran = smoke_runs[test_the_peers_benchmark_without_the_peers_measures_stalwart_and_says_how_to_install_them.__name__]
    assert ran.returncode == 0, f"bench.peers failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    rows = ran.stdout.rstrip().splitlines()
    assert any(re.match(r" *stalwart: +[\d.]+ ms per step", row) for row in rows), ran.stdout
    for peer in ("openai-agents", "pydantic-ai"):
        assert any(re.match(rf" *{peer}: skipped, not installed .*pip install -e '\.\[peers\]'", row) for row in rows)
    assert rows[-1] == "ratio: none (no peer installed: pip install -e '.[peers]')"


@pytest.mark.slow
def test_a_benchmark_leaves_no_conversations_in_the_default_storage(smoke_runs: SmokeRuns):
    """Run where STALWART_STORAGE is unset, a benchmark writes to a scratch folder beside the default one, on the
    same disk, and removes it: measuring for a day used to leave hundreds of megabytes in the default storage.

    `concurrency` is the quickest of the benchmarks whose runs write conversations: every benchmark that runs a
    worker takes its scratch folder from `bench.harness.scratch_storage`."""
    name = test_a_benchmark_leaves_no_conversations_in_the_default_storage.__name__
    ran = smoke_runs[name]
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert RATIO_LINE.search(ran.stdout)
    folder = smoke_runs.runs[name].cwd
    left = [path.relative_to(folder) for path in folder.rglob("*")]
    assert left == [Path("data")]  # no conversations, and no empty `stalwart/` folder either
