"""How long the `stalwart` command takes to answer, started as a user starts it: `--help`, `check FILE`, `show ID`.

Issue 14's target is at most 0.3 s each on this machine. Each command runs `--repeat` times as a fresh process
of the installed `stalwart` executable, and its median wall time is printed; `show` reads a finished run of the
calculator agent on a dev server started here. Three baselines run the same way, in the same rounds (so the
machine's noise falls on all of them alike): the bare interpreter (`python -c pass`); the interpreter importing
the Temporal SDK's client (`import temporalio.client`, with the collector off as `stalwart` imports), which any
command built on that client (as `StalwartClient` is) pays before it does anything; and the interpreter importing
the service client under it (`import temporalio.service`), the floor of a command that only reads a run, as
`show` does through `client/reader.py`. Then `show` runs once under `python -X importtime`, and its import time is
split by package, to show where its start goes.

Python compiles Stalwart's own modules on every start when it may not write their bytecode (an editable
install with PYTHONDONTWRITEBYTECODE set, as on this machine), which costs `show` about 35 ms. A user's
machine writes it on the first start (and `pip install` of a wheel at install), so in that case `check` and
`show` are also measured as they start once it is written: with PYTHONDONTWRITEBYTECODE unset and the cache
in a scratch folder (PYTHONPYCACHEPREFIX), written by the warm-up round.

    .venv/bin/python -m bench.cli_start [--repeat 9]

The last line is `ratio: X.XX`, `show` over the SDK client's import, the baseline of earlier figures: below 1.00
since `show` reads through the service client alone (bench/README.md has the figures of both).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.options import count

TARGET_SECONDS = 0.3
SDK_IMPORT, CHECK, SHOW = "import temporalio.client", "stalwart check FILE", "stalwart show ID"
SERVICE_IMPORT = "import temporalio.service"
AGENT_FILE = Path(__file__).resolve().parent.parent / "agents" / "calculator.toml"
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+\d+ \| *(\S+)$")


def _stalwart() -> str:
    """The `stalwart` executable installed into this environment, as a user runs it."""
    from stalwart.workers.dev_server import find_executable

    try:
        return str(find_executable("stalwart"))
    except FileNotFoundError:
        raise SystemExit("no `stalwart` executable in this environment: install the project first (README)") from None


def _finished(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`argv` run to success; a failure stops the benchmark with the command's error, never a figure of it."""
    ran = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env
    )
    if ran.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({ran.returncode}):\n{ran.stderr[-2000:]}")
    return ran


def _seconds(argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    _finished(argv, env)
    return time.perf_counter() - started


def _import_split(argv: list[str]) -> dict[str, float]:
    """Milliseconds of import, self time summed by top-level package, of one run of `argv` under -X importtime."""
    split: dict[str, float] = defaultdict(float)
    for line in _finished([sys.executable, "-X", "importtime", *argv]).stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            split[match.group(2).split(".")[0]] += int(match.group(1)) / 1000
    return split


def _compiles_every_start() -> bool:
    """Whether the commands find Stalwart's modules uncompiled, and may not cache them: each start compiles them."""
    from stalwart.client import cli

    return not Path(importlib.util.cache_from_source(cli.__file__)).exists() and bool(
        os.environ.get("PYTHONDONTWRITEBYTECODE")
    )


def _caching_bytecode(folder: str) -> dict[str, str]:
    """The environment of a command that writes and reads its bytecode cache in `folder`, as Python does by default."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": folder}


async def main(repeat: int) -> None:
    # Loaded here, after argparse: `--help` or a refused option answers without the SDK's seconds of imports.
    from bench.harness import bench_server
    from stalwart.client.agent_files import load_agent

    async with bench_server() as stalwart:
        handle = await stalwart.start(load_agent(AGENT_FILE), "What is (17 * 23) + 4?")
        await handle.result()
        run_id, address = handle.run_id, stalwart.temporal.service_client.config.target_host
        stalwart_executable = _stalwart()
        baselines = {
            "python -c pass": [sys.executable, "-c", "pass"],
            # With the collector off during the import, as `stalwart` imports (cli.py: `_collect_from_now_on`).
            SDK_IMPORT: [sys.executable, "-c", "import gc; gc.disable(); import temporalio.client"],
            SERVICE_IMPORT: [sys.executable, "-c", "import gc; gc.disable(); import temporalio.service"],
        }
        commands = {
            "stalwart --help": [stalwart_executable, "--help"],
            CHECK: [stalwart_executable, "check", str(AGENT_FILE)],
            SHOW: [stalwart_executable, "show", run_id, "--address", address],
        }
        runs: dict[str, tuple[list[str], dict[str, str] | None]] = {
            name: (argv, None) for name, argv in {**baselines, **commands}.items()
        }
        with tempfile.TemporaryDirectory(prefix="stalwart-bytecode-") as cache:
            compiles = _compiles_every_start()
            if compiles:  # the same two commands as a user's machine runs them once the first start cached them
                for name in (CHECK, SHOW):
                    runs[f"{name}, cached"] = (commands[name], _caching_bytecode(cache))
            times: dict[str, list[float]] = {name: [] for name in runs}
            for round_ in range(repeat + 1):  # round 0 warms the file cache (and writes the bytecode): not counted
                for name, (argv, env) in runs.items():
                    seconds = await asyncio.to_thread(_seconds, argv, env)
                    if round_:
                        times[name].append(seconds)
        split = await asyncio.to_thread(
            _import_split, ["-m", "stalwart.client.cli", "show", run_id, "--address", address]
        )
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians[SDK_IMPORT]
    case = (
        "Stalwart's modules had no bytecode cache, so each start compiled them (PYTHONDONTWRITEBYTECODE); "
        "the rows ending in `, cached` started with the cache a user's machine writes on its first start"
        if compiles
        else "Stalwart's modules had a bytecode cache"
    )
    print(f"each command started {repeat} times as a fresh process, median wall time; {case}")
    for name, seconds in medians.items():
        verdict = "met" if seconds <= TARGET_SECONDS else "not met"
        target = f"  (target <= {TARGET_SECONDS} s: {verdict})" if name not in baselines else ""
        print(f"{name:>27}: {seconds:.3f} s  ({seconds / floor:.2f} of the SDK's import){target}")
    total = sum(split.values())
    largest = sorted(split.items(), key=lambda item: -item[1])[:6]
    parts = ", ".join(f"{package} {ms:.0f}" for package, ms in largest)
    print(f"show's imports under -X importtime: {total:.0f} ms of self time, by package: {parts} ms")
    print(f"ratio: {medians[SHOW] / floor:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=count, default=9, help="times each command is started (after a warm-up)")
    args = parser.parse_args()
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(args.repeat))
