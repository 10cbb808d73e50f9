"""What the dev server spends on a run of ours beyond a bare one, and how much of it the things a run of ours
carries explain.

`bench/concurrency.py` finds ours slower than bare when 1,000 runs share one worker, while this process spends the
same CPU per step on both sides: the difference is the dev server's CPU, and the two share the machine's cores.
Here each thing a run of ours has and a bare run lacks (`baselines.PRICED_FEATURES`) is priced on the server alone,
by `BareLatencyStepsWith` (`bench/baselines.py`) carrying that one feature, in the concurrency benchmark's shape
(two turns of a slow model and a no-op tool, then a last model step; every run of a phase started at once):

- search attributes: Stalwart's six set at the start, a patch marker (with the `TemporalChangeVersion` upsert the
  SDK's core adds to every patch) and the final status and counters upserted at the end;
- activity timeouts: the loop's model and tool timeouts, heartbeat timeouts among them;
- history bytes: as many more bytes as a run of ours has beyond bare and the two features above (measured on
  warm-up runs before the phases start), spread over the activities' inputs and results, where most of ours are;

and all three together, which shows whether their costs add up.

The dev server's CPU is counted from a phase's first start until `--settle` seconds after its last result, so a
run is also charged for the timers the server fires after it (a heartbeat timeout's, 30 s after its activity
started). The phases run in mirrored order, bare, each feature, all three, ours, ours, and back: the server
slows as its database fills, which running each side once would charge to whichever ran later.

    .venv/bin/python -m bench.server_cost [--runs 500] [--latency 0.2] [--settle 35]

It prints each side's server CPU per run and its excess over bare, the share of ours' excess the three features
explain, and ends with `ratio: X.XX`, ours' server CPU per run over bare's.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from bench.concurrency import (
    BARE_QUEUE,
    TOOL_TURNS,
    Phase,
    echo_agent,
    ours_and_bare,
    process_cpu_seconds,
    run_phase,
)
from bench.options import count, seconds

# The SDK, the worker and the baselines are loaded where they are used, after argparse: `--help` or a refused
# option answers without their seconds of imports.

ALL_THREE = "all three"
WARM_UP_RUNS = 20


def _sides() -> tuple[str, ...]:
    """The phases, in order: bare, bare with each priced feature, with all three, ours."""
    from bench import baselines

    return ("bare", *baselines.PRICED_FEATURES, ALL_THREE, "ours")


def _server_ms_per_run(phase: Phase) -> float:
    return 1000 * phase.server_cpu_seconds / phase.runs


async def main(runs: int, latency: float, settle: float) -> None:
    from bench import baselines
    from bench.harness import measure

    sides = _sides()
    async with ours_and_bare(latency) as (stalwart, pid):
        client = stalwart.temporal
        agent = echo_agent()
        # What `StalwartClient` starts a run with, so the priced search attributes are exactly ours.
        our_attributes = stalwart._start_options(agent, "echo twice", status="running")["search_attributes"]
        tag = uuid.uuid4().hex[:8]
        padding = ""  # sized after the warm-up; `start` reads it when it starts a run
        first_ids: dict[str, str] = {}  # a run of each side, to measure its history

        def starting(side: str, phase: str) -> Callable[[int], Awaitable[Awaitable[Any]]]:
            async def start(n: int) -> Awaitable[Any]:
                workflow_id = f"{side.replace(' ', '-')}-{phase}-{tag}-{n}"
                first_ids.setdefault(side, workflow_id)
                if side == "ours":
                    return (await stalwart.start(agent, "echo twice", run_id=workflow_id)).result()
                if side == "bare":
                    workflow: Any = baselines.BareLatencyStepsWorkflow.run
                    args: list[Any] = [TOOL_TURNS, latency]
                else:
                    features = list(baselines.PRICED_FEATURES) if side == ALL_THREE else [side]
                    workflow = baselines.BareLatencyStepsWithWorkflow.run
                    args = [TOOL_TURNS, latency, features, padding]
                handle = await client.start_workflow(
                    workflow,
                    args=args,
                    id=workflow_id,
                    task_queue=BARE_QUEUE,
                    search_attributes=our_attributes if side in ("search attributes", ALL_THREE) else None,
                )
                return handle.result()

            return start

        totals: dict[str, Phase] = {}
        for side in sides:
            await run_phase("warm-up", min(runs, WARM_UP_RUNS), starting(side, "warm-up"), pid)
        sizes = {side: await measure(stalwart, first_ids[side]) for side in sides}
        extra = sizes["ours"][1] - sizes["bare"][1]
        explained = sum(sizes[side][1] - sizes["bare"][1] for side in baselines.PRICED_FEATURES)
        # In each activity's input and its result; JSON adds nothing to ASCII letters.
        padding = "x" * max(0, (extra - explained) // (2 * sizes["history bytes"][2]))
        first_ids.pop("history bytes")
        first_ids.pop(ALL_THREE)
        for number, side in enumerate([*sides, *reversed(sides)]):
            before = process_cpu_seconds(pid)
            phase = await run_phase(side, runs, starting(side, f"p{number}"), pid)
            await asyncio.sleep(settle)
            phase = dataclasses.replace(phase, server_cpu_seconds=process_cpu_seconds(pid) - before)
            totals[side] = totals[side] + phase if side in totals else phase
        history = {side: (await measure(stalwart, first_ids[side]))[1] for side in sides}
    _report(runs, latency, settle, totals, history)


def _report(runs: int, latency: float, settle: float, totals: dict[str, Phase], history: dict[str, int]) -> None:
    from bench import baselines

    sides = _sides()
    print(
        f"{runs} runs a phase, each {TOOL_TURNS} turns of a {latency * 1000:.0f} ms model and a no-op tool, then a "
        f"last model step; phases {', '.join([*sides, *reversed(sides)])}; the dev server's CPU counted until "
        f"{settle:g} s after each phase's last result"
    )
    bare = totals["bare"]
    print(f"{'side':>18}  {'server CPU a run':>16}  {'over bare':>9}  {'steps/s':>7}  {'history a run':>13}")
    over_bare = {side: _server_ms_per_run(total) - _server_ms_per_run(bare) for side, total in totals.items()}
    for side in sides:
        total = totals[side]
        over = "" if side == "bare" else f"{over_bare[side]:+7.1f} ms"
        print(
            f"{side:>18}  {_server_ms_per_run(total):13.1f} ms  {over:>9}  {total.steps_per_second:7.1f}  "
            f"{history[side]:>10,} B"
        )
    excess, together = over_bare["ours"], over_bare[ALL_THREE]
    summed = sum(over_bare[side] for side in baselines.PRICED_FEATURES)
    share = f" ({together / excess:.0%} of it)" if excess > 0 else ""
    print(
        f"ours costs the server {excess:+.1f} ms a run over bare; the three features {together:+.1f} ms together"
        f"{share}, {summed:+.1f} ms one at a time"
    )
    print(f"ratio: {_server_ms_per_run(totals['ours']) / _server_ms_per_run(bare):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=count, default=500, help="runs started at once in each phase")
    parser.add_argument("--latency", type=seconds, default=0.2, help="seconds the simulated model takes per call")
    parser.add_argument(
        "--settle",
        type=seconds,
        default=35.0,
        help="seconds the server's CPU is still counted after a phase's last result (timers it fires later)",
    )
    args = parser.parse_args()
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(args.runs, args.latency, args.settle))
