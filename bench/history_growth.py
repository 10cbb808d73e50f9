"""How a run's history grows with its number of tool calls: ours linearly, a carried conversation quadratically.

Every turn calls a tool whose result is 2 KB, a different page each time
(identical results would be stored once, by their hash). Our model activity
gets a reference to the stored conversation plus only the messages new since
its last call, so the history grows by a constant per turn. That constant holds
each tool result once, in the tool's completion: the tool activity stores a
result over 1 KB and the next model call's input names it, and a step log this
long ends the run in storage (`AgentResult.earlier`) with those results named,
not repeated. The baseline passes the whole conversation as the input of
every model activity, as the published agent-SDK integrations for Temporal do;
the "formula" column is the fit measured for those integrations with 2 KB
results (bytes ~ 3.0k + 6.2k*K + 1.14k*K^2 for K tool calls). Once one of the
baseline's inputs passes the external-storage threshold it leaves the history
for storage, so at large K its history (and the carried/ours ratio) understates
what that design costs. Temporal suggests continue-as-new from 4 MiB of history
and terminates a run at 50 MiB.

It also prints, for ours, the history (summed over every run of the
continue-as-new chain) and the bytes added under `STALWART_STORAGE` (a fresh
temporary folder) over the run's content: the goal, every tool call's
arguments and result, and every model text, as the step log records them. The
target is 3x the content or less, for each, at 1,000 steps.

    .venv/bin/python -m bench.history_growth [--turns 5 20 40] [--result-bytes 2048]
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from bench.options import count

if TYPE_CHECKING:  # the rest loads where it is used, after the arguments are parsed: a usage error is said at once
    from bench.harness import Run
    from stalwart.contracts.activities import ModelContext
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import AssistantTurn
    from stalwart.contracts.run import AgentResult

GOAL = "Fetch the pages one by one, then summarise."
SUGGEST_CONTINUE_AS_NEW = {"history_bytes": 4 * 1024 * 1024, "events": 4096}
HISTORY_LIMIT = {"history_bytes": 50 * 1024 * 1024, "events": 51_200}


class BlobCalls:
    """Calls `blob` at each of the first `turns` model calls, then answers.

    It stands in for the `scripted` model, in this process, so that the agent spec, which travels in the input
    of every model call, stays the same size however many turns a run has: a list of scripted replies would
    grow it, and the figures would be the benchmark's own rather than the loop's.
    """

    def __init__(self, turns: int, result_bytes: int) -> None:
        self._turns = turns
        self._result_bytes = result_bytes

    async def complete(self, context: ModelContext) -> AssistantTurn:
        from stalwart.contracts.messages import AssistantTurn, ToolCall

        if context.step > self._turns:
            return AssistantTurn(text=f"done after {self._turns} tool calls", model="scripted")
        call = ToolCall(
            id=f"call_{context.step}", name="blob", arguments={"size": self._result_bytes, "page": context.step}
        )
        return AssistantTurn(tool_calls=[call], model="scripted")


def blob_agent(turns: int) -> AgentSpec:
    from stalwart.contracts.agent import AgentSpec, Budgets

    return AgentSpec(
        name="bench-growth",
        tools=["blob"],
        budgets=Budgets(max_steps=turns + 1),
    )


def content_bytes(result: AgentResult) -> int:
    """The run's content: what its step log holds in text (goal, model texts, tool arguments and results)."""
    total = 0
    for step in result.steps:
        total += len(step.content.encode()) + len((step.result or "").encode()) + len((step.error or "").encode())
        if step.arguments is not None:
            total += len(json.dumps(step.arguments).encode())
    return total


def per_turn(runs: dict[int, Run]) -> list[str]:
    """Bytes each added turn cost between consecutive sizes: flat for linear growth, rising for quadratic."""
    sizes = sorted(runs)
    return [
        f"{a}->{b}: {(runs[b].history_bytes - runs[a].history_bytes) / (b - a) / 1024:.1f} KB/turn"
        for a, b in zip(sizes, sizes[1:], strict=False)
    ]


def turns_until(runs: dict[int, Run], limits: dict[str, int]) -> str:
    """Turns until the history reaches the first of `limits` (bytes or events),
    extrapolating the last interval linearly."""
    sizes = sorted(runs)
    a, b = sizes[-2], sizes[-1]
    reached = {}
    for measure, limit in limits.items():
        slope = (getattr(runs[b], measure) - getattr(runs[a], measure)) / (b - a)
        reached[measure] = b + (limit - getattr(runs[b], measure)) / slope
    first = min(reached, key=reached.__getitem__)
    return (
        f"~{reached[first]:.0f} turns (by {first.replace('history_', '')}; by the other ~{max(reached.values()):.0f})"
    )


async def main(turn_counts: list[int], result_bytes: int) -> None:
    from bench.baselines import CarriedConversationWorkflow, CarriedModelRequest
    from bench.harness import bench_server, run_bare, run_ours, scratch_storage, storage_bytes
    from stalwart.activities import providers
    from stalwart.contracts.messages import Message

    ours: dict[int, Run] = {}
    stored: dict[int, int] = {}
    carried: dict[int, Run] = {}
    with scratch_storage() as root:
        assert root is not None
        async with bench_server() as stalwart:
            for turns in turn_counts:
                before = sum(storage_bytes(root).values())
                providers.PROVIDERS["scripted"] = lambda agent, clients, turns=turns: BlobCalls(turns, result_bytes)
                ours[turns] = await run_ours(stalwart, blob_agent(turns), GOAL)
                stored[turns] = sum(storage_bytes(root).values()) - before
                request = CarriedModelRequest(
                    turns=turns, result_bytes=result_bytes, messages=[Message(role="user", content=GOAL)]
                )
                carried[turns] = await run_bare(stalwart, CarriedConversationWorkflow.run, request)
    print(f"history size by tool calls, {result_bytes} B per tool result")
    print(
        f"{'turns':>5} {'ours KB':>9} {'events':>6} {'runs':>4} {'carried KB':>11} "
        f"{'events':>6} {'carried/ours':>12} {'formula KB':>10}"
    )
    for turns in turn_counts:
        formula = (3.0e3 + 6.2e3 * turns + 1.14e3 * turns**2) / 1024
        print(
            f"{turns:>5} {ours[turns].history_bytes / 1024:>9.1f} {ours[turns].events:>6} {ours[turns].runs:>4} "
            f"{carried[turns].history_bytes / 1024:>11.1f} {carried[turns].events:>6} "
            f"{carried[turns].history_bytes / ours[turns].history_bytes:>12.2f} {formula:>10.1f}"
        )
    print("ours, over the run's content (target <= 3x at 1,000 steps):")
    print(
        f"{'turns':>5} {'content KB':>10} {'history KB':>10} {'history/content':>15} "
        f"{'storage KB':>10} {'storage/content':>15}"
    )
    for turns in turn_counts:
        result = ours[turns].result
        assert result is not None
        content = content_bytes(result)
        print(
            f"{turns:>5} {content / 1024:>10.1f} {ours[turns].history_bytes / 1024:>10.1f} "
            f"{ours[turns].history_bytes / content:>15.2f} "
            f"{stored[turns] / 1024:>10.1f} {stored[turns] / content:>15.2f}"
        )
    print("ours, per added turn:    " + "; ".join(per_turn(ours)))
    print("carried, per added turn: " + "; ".join(per_turn(carried)))
    print(f"ours: continue-as-new suggested (4 MiB or 4,096 events) at {turns_until(ours, SUGGEST_CONTINUE_AS_NEW)}")
    print(f"ours: run terminated (50 MiB or 51,200 events) at {turns_until(ours, HISTORY_LIMIT)}")
    last = turn_counts[-1]
    print(f"ratio: {carried[last].history_bytes / ours[last].history_bytes:.2f} (carried over ours at {last} turns)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--turns",
        type=count,
        nargs="+",
        default=[5, 20, 40],
        help="tool calls per run, two sizes at least (default 5 20 40)",
    )
    parser.add_argument("--result-bytes", type=count, default=2048, help="size of each tool result (default 2048)")
    args = parser.parse_args()
    if len(set(args.turns)) < 2:
        parser.error("--turns needs two different sizes at least: growth is measured between sizes")
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(sorted(args.turns), args.result_bytes))
