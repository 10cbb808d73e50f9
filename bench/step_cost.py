"""What one agent step costs on Temporal: our loop against a bare workflow with the same activity round trips.

A run of ours is N turns of the scripted model calling the no-op `echo` tool,
then an answer: 2N+2 activities (describe_tools, N+1 model turns, N tools).
Each model turn reads the conversation from storage and appends the new
messages to it (no query of the workflow since sessions landed). The bare
workflow schedules the same activities as no-ops and nothing else;
"bare+query" also makes each model no-op query its workflow, which is what
our model activity used to do; "typed" gives every no-op one pydantic input and
output and a summary, as every activity of ours has, so "ours over typed" is
what our own code adds beyond what the SDK charges any such activity. All run one at a time, interleaved, on one
fresh in-memory dev server; the first run of each is a warm-up. A step is one turn.

    .venv/bin/python -m bench.step_cost [--turns 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from bench.baselines import BareStepsWorkflow, TypedStepsWorkflow
from bench.harness import Run, bench_server, run_bare, run_ours
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall


def echo_agent(turns: int) -> AgentSpec:
    # Distinct arguments each turn: identical calls would be answered by the thrash guard without an activity.
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"ping {n}"})]) for n in range(turns)
    ]
    return AgentSpec(
        name="bench-steps",
        tools=["echo"],
        budgets=Budgets(max_steps=turns + 1),
        scripted=[*replies, ScriptedReply(text="done")],
    )


def per_step_ms(runs: list[Run], turns: int) -> float:
    return statistics.median(r.seconds for r in runs) * 1000 / turns


async def main(turns: int, repeat: int) -> None:
    agent = echo_agent(turns)
    results: dict[str, list[Run]] = {"ours": [], "bare": [], "bare+query": [], "typed": []}
    async with bench_server() as stalwart:
        for measured in [False] + [True] * repeat:
            round_of_runs = {
                "ours": await run_ours(stalwart, agent, "echo until done"),
                "bare": await run_bare(stalwart, BareStepsWorkflow.run, turns, False),
                "bare+query": await run_bare(stalwart, BareStepsWorkflow.run, turns, True),
                "typed": await run_bare(stalwart, TypedStepsWorkflow.run, turns, 0.0),
            }
            if measured:
                for name, run in round_of_runs.items():
                    results[name].append(run)
    print(f"{turns} turns per run, {repeat} runs of each after one warm-up; per step = median run / {turns}")
    for name, runs in results.items():
        run_ms = ", ".join(f"{r.seconds * 1000:.0f}" for r in runs)
        print(
            f"{name:>10}: {per_step_ms(runs, turns):5.1f} ms per step  (runs: {run_ms} ms)  "
            f"history: {runs[0].events} events, {runs[0].history_bytes} bytes, {runs[0].activities} activities"
        )
    print(f"ours over typed: {per_step_ms(results['ours'], turns) / per_step_ms(results['typed'], turns):.2f}")
    print(f"ratio: {per_step_ms(results['ours'], turns) / per_step_ms(results['bare'], turns):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20, help="tool-calling turns per run (default 20)")
    parser.add_argument("--repeat", type=int, default=5, help="measured runs of each workflow (default 5)")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.repeat))
