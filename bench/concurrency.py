"""How many runs one worker carries at once: 1,000 agent runs started together against bare workflows.

Every run is the same short agent: two turns of a model that takes 200 ms
(the `scripted` model behind an `asyncio.sleep`, standing in for a provider's
latency) calling the no-op `echo` tool, then an answer: 3 model steps per run.
The baseline is the same number of `BareLatencySteps` workflows scheduling
the same activities (a 200 ms model no-op, a no-op tool) on the same dev
server, from a worker with the same options. A second baseline, `TypedSteps`,
gives those activities a pydantic input and output and a summary each, as
ours have: our steps per second over its are what our own code costs. Each phase starts every run at
once (the starts themselves go out 100 at a time) and ends when the last
result is in; throughput is model steps per second of those wall-clock spans.

The phases run in the order bare, typed, ours, ours, typed, bare, and each
side's figures are the sum of its two phases: every run the dev server keeps makes its
database slower for the next phase (a second phase of 1,000 runs took the
server a third more CPU than the first), so running one side after the
other would charge that to whichever went second.

Each side reports this process's CPU seconds (client and worker, including
the SDK's Rust threads), the dev server's CPU seconds (the two share the
machine's cores, so a run that costs the server more leaves the worker less),
and resident memory after its last phase. The worker options are
`build_worker`'s defaults, so the figures are what a user gets without tuning.

    .venv/bin/python -m bench.concurrency [--runs 1000] [--latency 0.2]

The last line is `ratio: X.XX`, our steps per second over bare (target >= 0.8).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.options import count, seconds

if TYPE_CHECKING:  # the rest loads where it is used, after the arguments are parsed: a usage error is said at once
    from stalwart.client.api import StalwartClient
    from stalwart.contracts.activities import ModelContext
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import AssistantTurn

TOOL_TURNS = 2
STEPS_PER_RUN = TOOL_TURNS + 1
OUR_QUEUE = "bench-concurrency-ours"
BARE_QUEUE = "bench-concurrency-bare"
WARM_UP_RUNS = 20
"""Runs of each side before the measured phases, or as many as a phase has when it has fewer."""


class SlowScriptedModel:
    """The scripted model, answering after `latency` seconds like a remote provider would."""

    def __init__(self, latency: float) -> None:
        from stalwart.activities.providers.scripted import ScriptedProvider

        self._latency = latency
        self._scripted = ScriptedProvider()

    async def complete(self, context: ModelContext) -> AssistantTurn:
        await asyncio.sleep(self._latency)
        return await self._scripted.complete(context)


def echo_agent() -> AgentSpec:
    from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall

    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"ping {n}"})])
        for n in range(TOOL_TURNS)
    ]
    return AgentSpec(
        name="bench-concurrency",
        tools=["echo"],
        budgets=Budgets(max_steps=STEPS_PER_RUN),
        scripted=[*replies, ScriptedReply(text="done")],
    )


@dataclass
class Phase:
    name: str
    runs: int
    seconds: float
    start_seconds: float
    cpu_seconds: float
    server_cpu_seconds: float
    rss_mib: float

    @property
    def steps_per_second(self) -> float:
        return self.runs * STEPS_PER_RUN / self.seconds

    def __add__(self, later: Phase) -> Phase:
        return Phase(
            self.name,
            self.runs + later.runs,
            self.seconds + later.seconds,
            self.start_seconds + later.start_seconds,
            self.cpu_seconds + later.cpu_seconds,
            self.server_cpu_seconds + later.server_cpu_seconds,
            later.rss_mib,
        )


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of another process (the dev server), from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def run_phase(
    name: str, runs: int, start_one: Callable[[int], Awaitable[Awaitable[Any]]], server_pid: int
) -> Phase:
    """Start `runs` runs (100 starts in flight at a time), then wait for every result."""
    gate = asyncio.Semaphore(100)

    async def started(n: int) -> Awaitable[Any]:
        async with gate:
            return await start_one(n)

    server_cpu, cpu, began = process_cpu_seconds(server_pid), _cpu_seconds(), time.perf_counter()
    waits = await asyncio.gather(*(started(n) for n in range(runs)))
    start_seconds = time.perf_counter() - began
    await asyncio.gather(*waits)
    seconds = time.perf_counter() - began
    return Phase(
        name,
        runs,
        seconds,
        start_seconds,
        _cpu_seconds() - cpu,
        process_cpu_seconds(server_pid) - server_cpu,
        _rss_mib(),
    )


@asynccontextmanager
async def ours_and_bare(latency: float) -> AsyncIterator[tuple[StalwartClient, int]]:
    """A fresh dev server with our worker and the baselines' one polling it, with the same options
    (`build_worker`'s defaults), the scripted model answering after `latency` seconds and a scratch storage;
    yields a client and the server's pid, whose CPU the phases count."""
    from temporalio.worker import Worker

    from bench import baselines
    from bench.harness import scratch_storage
    from stalwart.activities import providers
    from stalwart.client.api import StalwartClient
    from stalwart.workers.dev_server import DevServer
    from stalwart.workers.worker import WORKER_DEFAULTS, build_worker

    providers.PROVIDERS["scripted"] = lambda agent, clients: SlowScriptedModel(latency)
    with scratch_storage(unless_configured=True):
        async with DevServer(port=None, ui_port=None) as server:
            stalwart = await StalwartClient.connect(server.address, task_queue=OUR_QUEUE)
            ours = build_worker(stalwart.temporal, task_queue=OUR_QUEUE)
            bare = Worker(
                stalwart.temporal,
                task_queue=BARE_QUEUE,
                workflows=baselines.WORKFLOWS,
                activities=baselines.ACTIVITIES,
                **WORKER_DEFAULTS,
            )
            assert server.process is not None
            async with ours, bare:
                yield stalwart, server.process.pid


async def main(runs: int, latency: float) -> None:
    from bench import baselines
    from stalwart.workers.worker import WORKER_DEFAULTS

    agent = echo_agent()
    async with ours_and_bare(latency) as (stalwart, pid):
        client = stalwart.temporal
        tag = uuid.uuid4().hex[:8]

        async def start_ours(n: int) -> Awaitable[Any]:
            handle = await stalwart.start(agent, "echo twice", run_id=f"ours-{tag}-{n}")
            return handle.result()

        def starting(workflow: Callable[..., Awaitable[int]], name: str) -> Callable[[int], Awaitable[Awaitable[Any]]]:
            async def start(n: int) -> Awaitable[Any]:
                handle = await client.start_workflow(
                    workflow, args=[TOOL_TURNS, latency], id=f"{name}-{tag}-{n}", task_queue=BARE_QUEUE
                )
                return handle.result()

            return start

        start_bare = starting(baselines.BareLatencyStepsWorkflow.run, "bare")
        start_typed = starting(baselines.TypedStepsWorkflow.run, "typed")

        warm_up = min(WARM_UP_RUNS, runs)  # a smoke run of 1 is not held up by 60 warm-up runs
        await run_phase("warm-up", warm_up, start_ours, pid)
        await run_phase("warm-up", warm_up, start_bare, pid)
        await run_phase("warm-up", warm_up, start_typed, pid)
        first_bare = await run_phase("bare", runs, start_bare, pid)
        first_typed = await run_phase("typed", runs, start_typed, pid)
        first_ours = await run_phase("ours", runs, start_ours, pid)
        ours_phase = first_ours + await run_phase("ours", runs, start_ours, pid)
        typed_phase = first_typed + await run_phase("typed", runs, start_typed, pid)
        bare_phase = first_bare + await run_phase("bare", runs, start_bare, pid)
    print(
        f"{runs} runs at once on one worker, {STEPS_PER_RUN} model steps of {latency * 1000:.0f} ms and "
        f"{TOOL_TURNS} no-op tools each; worker options: {WORKER_DEFAULTS}; phases bare, typed, ours, ours, typed, bare"
    )
    for phase in (bare_phase, typed_phase, ours_phase):
        print(
            f"{phase.name:>5}: {phase.steps_per_second:7.1f} steps/s  ({phase.seconds:.1f} s for "
            f"{phase.runs * STEPS_PER_RUN} steps, starts took {phase.start_seconds:.1f} s; "
            f"process CPU {phase.cpu_seconds:.1f} s, dev server CPU {phase.server_cpu_seconds:.1f} s, "
            f"RSS {phase.rss_mib:.0f} MiB)"
        )
    print(f"ours over typed: {ours_phase.steps_per_second / typed_phase.steps_per_second:.2f}")
    print(f"ratio: {ours_phase.steps_per_second / bare_phase.steps_per_second:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=count, default=1000)
    parser.add_argument("--latency", type=seconds, default=0.2, help="seconds the simulated model takes per call")
    args = parser.parse_args()
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(args.runs, args.latency))
