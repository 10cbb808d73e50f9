"""How a run's history grows with its number of tool calls: ours linearly, a carried conversation quadratically.

Every turn calls a tool whose result is 2 KB. Our model activity reads the
conversation by query, so each message enters the history once; the
baseline passes the whole conversation as the input of every model activity,
as the published agent-SDK integrations for Temporal do; the "formula" column
is the fit measured for those integrations with 2 KB results (bytes ~ 3.0k
+ 6.2k*K + 1.14k*K^2 for K tool calls). Temporal suggests
continue-as-new from 4 MiB of history and terminates a run at 50 MiB.

    .venv/bin/python -m bench.history_growth [--turns 5 20 40] [--result-bytes 2048]
"""

from __future__ import annotations

import argparse
import asyncio

from bench.baselines import CarriedConversationWorkflow, CarriedModelRequest
from bench.harness import Run, bench_server, run_bare, run_ours
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import Message

GOAL = "Fetch the pages one by one, then summarise."
SUGGEST_CONTINUE_AS_NEW = {"history_bytes": 4 * 1024 * 1024, "events": 4096}
HISTORY_LIMIT = {"history_bytes": 50 * 1024 * 1024, "events": 51_200}


def blob_agent(turns: int, result_bytes: int) -> AgentSpec:
    reply = ScriptedReply(tool_calls=[ScriptedToolCall(name="blob", arguments={"size": result_bytes})])
    return AgentSpec(
        name="bench-growth",
        tools=["blob"],
        thrash_guard=False,  # every turn must really run the tool and record its 2 KB result
        budgets=Budgets(max_steps=turns + 1),
        scripted=[reply] * turns + [ScriptedReply(text=f"done after {turns} tool calls")],
    )


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
    ours: dict[int, Run] = {}
    carried: dict[int, Run] = {}
    async with bench_server() as stalwart:
        for turns in turn_counts:
            ours[turns] = await run_ours(stalwart, blob_agent(turns, result_bytes), GOAL)
            request = CarriedModelRequest(
                turns=turns, result_bytes=result_bytes, messages=[Message(role="user", content=GOAL)]
            )
            carried[turns] = await run_bare(stalwart, CarriedConversationWorkflow.run, request)
    print(f"history size by tool calls, {result_bytes} B per tool result")
    print(
        f"{'turns':>5} {'ours KB':>9} {'events':>6} {'carried KB':>11} "
        f"{'events':>6} {'carried/ours':>12} {'formula KB':>10}"
    )
    for turns in turn_counts:
        formula = (3.0e3 + 6.2e3 * turns + 1.14e3 * turns**2) / 1024
        print(
            f"{turns:>5} {ours[turns].history_bytes / 1024:>9.1f} {ours[turns].events:>6} "
            f"{carried[turns].history_bytes / 1024:>11.1f} {carried[turns].events:>6} "
            f"{carried[turns].history_bytes / ours[turns].history_bytes:>12.2f} {formula:>10.1f}"
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
        type=int,
        nargs="+",
        default=[5, 20, 40],
        help="tool calls per run, two sizes at least (default 5 20 40)",
    )
    parser.add_argument("--result-bytes", type=int, default=2048, help="size of each tool result (default 2048)")
    args = parser.parse_args()
    if len(set(args.turns)) < 2:
        parser.error("--turns needs two different sizes at least: growth is measured between sizes")
    asyncio.run(main(sorted(args.turns), args.result_bytes))
