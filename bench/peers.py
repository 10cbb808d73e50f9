"""Stalwart against what its users could use instead: the same agent on the OpenAI Agents SDK's Temporal integration
and on pydantic-ai's, on one dev server, against one model.

The agent: instructions, then N calls (default 20) of the no-op `echo` tool, then the answer `done`. Its model is
`bench/fake_model.py`, an OpenAI-compatible Chat Completions server in a process of its own, whose replies depend
on the request alone (the same for every side) and come after the same `--latency`. Each side reaches it through
its own SDK and HTTP client: Stalwart as an `openai:` model with `base_url` at the fake model (so over the same
HTTP path a user's provider call takes), the OpenAI Agents integration with the Agents SDK's `OpenAIProvider` on
Chat Completions (`bench/peer_openai_agents.py`), pydantic-ai with its `OpenAIChatModel` and the `TemporalDurability`
capability (`bench/peer_pydantic_ai_agent.py`). Each side is set up as its guide says, with its defaults
otherwise: the peers' workflows run in the SDK's sandbox, Stalwart's outside it (workflows/agent.py says why).
Every side's workers run in this process; each peer has its own client, with the plugin its guide puts there.

The sides run one at a time, in rounds, each round in a rotated order, after one warm-up round whose garbage is
collected before the first measured one. For each side it prints:

- per step: the median run's wall time over N (a step is a model call and a tool call);
- history per step: the run's history bytes (protobuf, what Temporal's limits count, summed over a
  continue-as-new chain) over N;
- worker CPU per step: `time.process_time()` (user and system CPU of this whole process: every side's workers, the
  SDK's Rust threads, the client) from a run's start to its result, summed over the measured runs, over their
  steps; the sides never run at once, so a run's CPU is its own side's, plus the idle polling of the others;
- server CPU per step: the dev server's user and system CPU (from /proc) over the same spans;
- history after 40 and after 200 model calls (`--growth`: one run each, after the rounds), or how the run failed
  (Temporal terminates a run whose history passes 50 MB, and refuses a payload over 2 MB).

Then ours over each peer, the history ratio at the largest `--growth` (ours over the best peer that got there;
goal <= 0.3) and, last, `ratio:`, our per-step time over the best peer's (goal <= 0.8). A peer that is not
installed is skipped, saying so (`pip install -e '.[peers]'`); with none installed the ratio is `none`.

    .venv/bin/python -m bench.peers [--calls 20] [--rounds 7] [--growth 40 200] [--latency 0] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from bench import fake_model
from bench.concurrency import process_cpu_seconds
from bench.fake_model import FAKE_MODEL_URL, KEY_ENV
from bench.options import count, seconds

# The SDK, the worker and the harness are loaded where they are used, after argparse: `--help` or a refused option
# answers without their seconds of imports. None is imported inside a measured run.
if TYPE_CHECKING:
    from temporalio.client import Client

    from bench.harness import Run
    from stalwart.client.api import StalwartClient
    from stalwart.contracts.agent import AgentSpec

KEY = "sk-bench-0123456789"
OURS = "stalwart"
PEERS = {"openai-agents": "bench.peer_openai_agents", "pydantic-ai": "bench.peer_pydantic_ai"}
"""Each peer's module here: importing it imports what the peer needs (the `peers` extra installs it)."""
FULL = {"calls": 20, "rounds": 7, "growth": [40, 200]}
QUICK = {"calls": 5, "rounds": 2, "growth": [10, 20]}
MB = 1024 * 1024


@dataclass
class Side:
    """One way of running the agent: `run(n, id)` runs it to its answer with n tool calls, as workflow `id`."""

    name: str
    run: Callable[[int, str], Awaitable[None]]
    runs: list[Run] = field(default_factory=list)
    cpu: float = 0.0
    server_cpu: float = 0.0
    growth: dict[int, Run | str] = field(default_factory=dict)


def load(module: str) -> ModuleType | str:
    """A peer's module, or why it cannot be imported.

    Importing it is the test: the package that `import agents` finds is not the OpenAI Agents SDK when that is not
    installed and the repository's `agents/` folder is on the path (as a namespace package).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        return f"not installed ({err.name or err}): pip install -e '.[peers]'"


def our_agent(base_url: str, model_calls: int) -> AgentSpec:
    from stalwart.contracts.agent import AgentSpec, Budgets

    return AgentSpec(
        name="bench-peers",
        instructions=fake_model.INSTRUCTIONS,
        model=f"openai:{fake_model.MODEL}",
        base_url=base_url,
        api_key_env=KEY_ENV,
        tools=["echo"],
        budgets=Budgets(max_steps=model_calls),
    )


def ours(stalwart: StalwartClient, base_url: str) -> Callable[[int, str], Awaitable[None]]:
    async def run(calls: int, workflow_id: str) -> None:
        handle = await stalwart.start(our_agent(base_url, calls + 1), fake_model.prompt(calls), run_id=workflow_id)
        result = await handle.result()
        if result.stop_reason != "done" or result.answer != fake_model.ANSWER:
            raise RuntimeError(f"the Stalwart run stopped with {result.stop_reason}: {result.error or result.answer}")

    return run


def peer(module: ModuleType, client: Client) -> Callable[[int, str], Awaitable[None]]:
    async def run(calls: int, workflow_id: str) -> None:
        await client.execute_workflow(
            module.RUN, args=[fake_model.prompt(calls), calls + 1], id=workflow_id, task_queue=module.TASK_QUEUE
        )

    return run


def new_id() -> str:
    """A workflow id of the same length for every side: ours repeats it in every transcript reference."""
    return f"bench-{uuid.uuid4().hex[:12]}"


async def timed(side: Side, stalwart: StalwartClient, server_pid: int, calls: int) -> tuple[Run, float, float]:
    """One run of `side`: its wall time and history, this process's and the server's CPU seconds during it."""
    from bench.harness import Run, measure

    workflow_id = new_id()
    server_cpu, cpu, started = process_cpu_seconds(server_pid), time.process_time(), time.perf_counter()
    await side.run(calls, workflow_id)
    elapsed = time.perf_counter() - started
    cpu, server_cpu = time.process_time() - cpu, process_cpu_seconds(server_pid) - server_cpu
    return Run(elapsed, *await measure(stalwart, workflow_id)), cpu, server_cpu


async def grow(side: Side, stalwart: StalwartClient, model_calls: int) -> Run | str:
    """A run of `model_calls` model calls, or what became of it and how large its history was then."""
    from bench.harness import Run, measure

    workflow_id = new_id()
    try:
        await side.run(model_calls - 1, workflow_id)
    except Exception as err:
        cause = err.__cause__ or err
        try:
            events, history_bytes, *_ = await measure(stalwart, workflow_id)
            then = f" at {size(history_bytes)} of history, {events} events"
        except Exception:  # it never started
            then = ""
        return f"failed{then}: {type(cause).__name__}: {str(cause)[:160]}"
    return Run(0.0, *await measure(stalwart, workflow_id))


def size(value: float) -> str:
    return f"{value / MB:.2f} MB" if value >= MB else f"{value / 1024:.1f} KB"


async def main(calls: int, rounds: int, growth: list[int], latency: float) -> None:
    from bench.harness import OUR_QUEUE, scratch_storage
    from stalwart.client.api import StalwartClient
    from stalwart.workers.dev_server import DevServer
    from stalwart.workers.worker import build_worker

    os.environ[KEY_ENV] = KEY
    skipped: dict[str, str] = {}
    with fake_model.start(latency) as base_url, scratch_storage(unless_configured=True):
        os.environ[FAKE_MODEL_URL] = base_url  # read by the pydantic-ai agent's module as it is imported
        modules: dict[str, ModuleType] = {}
        for name, module in PEERS.items():
            loaded = load(module)
            if isinstance(loaded, str):
                skipped[name] = loaded
            else:
                modules[name] = loaded
        async with DevServer(port=None, ui_port=None) as server, AsyncExitStack() as workers:
            assert server.process is not None
            stalwart = await StalwartClient.connect(server.address, task_queue=OUR_QUEUE)
            await workers.enter_async_context(build_worker(stalwart.temporal, task_queue=OUR_QUEUE))
            sides = [Side(OURS, ours(stalwart, base_url))]
            for name, module in modules.items():
                client, worker = await module.worker(server.address, base_url, KEY)
                await workers.enter_async_context(worker)
                sides.append(Side(name, peer(module, client)))
            for number in range(rounds + 1):
                shift = number % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    run, cpu, server_cpu = await timed(side, stalwart, server.process.pid, calls)
                    if number:
                        side.runs.append(run)
                        side.cpu += cpu
                        side.server_cpu += server_cpu
                if not number:  # the start's and warm-up's garbage, else its full collection lands in a measured run
                    gc.collect()
            for model_calls in growth:
                for side in sides:
                    side.growth[model_calls] = await grow(side, stalwart, model_calls)
    report(sides, skipped, calls, rounds, growth, latency)


def report(
    sides: list[Side], skipped: dict[str, str], calls: int, rounds: int, growth: list[int], latency: float
) -> None:
    from bench.harness import Run

    print(
        f"{calls} tool calls per run ({calls + 1} model calls), {rounds} rounds of each side after a warm-up, "
        f"in rotated order; model latency {latency * 1000:g} ms; per step = median run / {calls}"
    )
    steps = calls * rounds
    per_step = {side.name: statistics.median(r.seconds for r in side.runs) * 1000 / calls for side in sides}
    for side in sides:
        history = side.runs[0].history_bytes
        grown = "  ".join(
            f"after {k} model calls: {size(g.history_bytes) if isinstance(g, Run) else g}"
            for k, g in side.growth.items()
        )
        print(
            f"{side.name:>14}: {per_step[side.name]:5.1f} ms per step  history {size(history / calls)} per step "
            f"({side.runs[0].events} events)  worker CPU {side.cpu * 1000 / steps:.1f} ms per step  "
            f"server CPU {side.server_cpu * 1000 / steps:.1f} ms per step  {grown}"
        )
    for name, why in skipped.items():
        print(f"{name:>14}: skipped, {why}")
    peers = [side for side in sides if side.name != OURS]
    if not peers:
        print("ratio: none (no peer installed: pip install -e '.[peers]')")
        return
    ours_side = sides[0]
    for side in peers:
        spread = sorted(o.seconds / p.seconds for o, p in zip(ours_side.runs, side.runs, strict=True))
        history = ours_side.runs[0].history_bytes / side.runs[0].history_bytes
        print(
            f"ours over {side.name}: per step {per_step[OURS] / per_step[side.name]:.2f} (each round, sorted: "
            f"{', '.join(f'{r:.2f}' for r in spread)}), history {history:.2f}"
        )
    largest = max(growth)
    reached = [s.growth[largest] for s in peers if isinstance(s.growth[largest], Run)]
    our_growth = ours_side.growth[largest]
    if reached and isinstance(our_growth, Run):
        best = min(r.history_bytes for r in reached if isinstance(r, Run))
        print(
            f"history after {largest} model calls, ours over the best peer that got there: "
            f"{our_growth.history_bytes / best:.2f} (goal <= 0.3)"
        )
    else:
        print(
            f"history after {largest} model calls: ours {our_growth if isinstance(our_growth, str) else 'got there'}, "
            f"no peer got there"
            if not reached
            else ""
        )
    best_peer = min(peers, key=lambda s: per_step[s.name])
    print(f"ratio: {per_step[OURS] / per_step[best_peer.name]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=count, help=f"tool calls per timed run (default {FULL['calls']})")
    parser.add_argument("--rounds", type=count, help=f"measured rounds of each side (default {FULL['rounds']})")
    parser.add_argument(
        "--growth", type=count, nargs="+", help=f"model calls of the history runs (default {FULL['growth']})"
    )
    parser.add_argument("--latency", type=seconds, default=0.0, help="seconds before each model reply (default 0)")
    parser.add_argument("--quick", action="store_true", help=f"a smaller default size: {QUICK}")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(
        main(
            args.calls or sizes["calls"],
            args.rounds or sizes["rounds"],
            args.growth or sizes["growth"],
            args.latency,
        )
    )
