"""What one agent step costs on Temporal: our loop against a bare workflow with the same activity round trips.

A run of ours is N turns of the scripted model calling the no-op `echo` tool, then an answer: 2N+2 activities
(describe_tools, N+1 model turns, N tools). Each model turn reads the conversation from storage and appends
the new messages to it (no query of the workflow since sessions landed). The bare workflow schedules the same
activities as no-ops and nothing else; "bare+query" also makes each model no-op query its workflow, which is
what our model activity used to do; "typed" gives every no-op one pydantic input and output and a summary, as
every activity of ours has, so "ours over typed" is what our own code adds beyond what the SDK charges any
such activity, less what leaving the sandbox saves (bench/README.md has the split). The baselines run in the
SDK's sandbox, its default, and `AgentWorkflow` does not (workflows/agent.py says why); "unsandboxed" is the
bare workflow outside it too, so "ours over bare outside the sandbox" leaves what the sandbox costs out of the
comparison. "ours fast" calls the built-in `calculator`, a fast tool run as a local activity, instead of `echo`:
`fast tool ratio` is its step over the bare step (a model and a tool activity), and "bare local" is the bare
workflow with its tool no-ops as local activities, the floor of such a step. All run one at a time, interleaved,
on one fresh in-memory dev server; the first run of each is a warm-up. A step is one turn.

    .venv/bin/python -m bench.step_cost [--turns 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from bench.baselines import (
    BareLocalToolStepsWorkflow,
    BareSessionWorkflow,
    BareStepsWorkflow,
    TypedStepsWorkflow,
    UnsandboxedBareStepsWorkflow,
)
from bench.harness import BARE_QUEUE, Run, bench_server, run_bare, run_ours
from bench.options import count
from stalwart.client.api import StalwartClient
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


def calculator_agent(turns: int) -> AgentSpec:
    """`echo_agent` with the built-in `calculator`, a fast tool, in place of `echo`: each step's tool call is a
    local activity, not a round trip through the server."""
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": f"{n} + 1"})])
        for n in range(turns)
    ]
    return AgentSpec(
        name="bench-fast-steps",
        tools=["calculator"],
        budgets=Budgets(max_steps=turns + 1),
        scripted=[*replies, ScriptedReply(text="done")],
    )


def session_agent(turns: int, calls: int = 1) -> AgentSpec:
    """A session whose every turn is `calls` tool-calling steps (`echo`), then the answer."""
    replies: list[ScriptedReply] = []
    for n in range(turns):
        for c in range(calls):
            call = ScriptedToolCall(name="echo", arguments={"text": f"ping {n}.{c}"})
            replies.append(ScriptedReply(tool_calls=[call]))
        replies.append(ScriptedReply(text=f"done {n}"))
    return AgentSpec(
        name="bench-session", tools=["echo"], budgets=Budgets(max_steps=(calls + 1) * turns), scripted=replies
    )


async def timed_turns(send: Callable[[int], Awaitable[Any]], turns: int) -> list[float]:
    """Seconds of each turn after the first (which also pays for the session's start)."""
    seconds = []
    for n in range(turns):
        started = time.perf_counter()
        await send(n)
        seconds.append(time.perf_counter() - started)
    return seconds[1:]


async def our_session(stalwart: StalwartClient, agent: AgentSpec, turns: int) -> list[float]:
    session = await stalwart.start_session(agent)

    async def send(n: int) -> None:
        result = await session.send(f"echo {n}")
        if result.stop_reason != "done":
            raise RuntimeError(f"the benchmark session's turn {n} stopped with {result.stop_reason}: {result.error}")

    seconds = await timed_turns(send, turns)
    await session.close()
    return seconds


async def bare_session(stalwart: StalwartClient, turns: int, calls: int = 1) -> list[float]:
    session = await stalwart.temporal.start_workflow(
        BareSessionWorkflow.run, calls, id=f"bare-session-{uuid.uuid4().hex[:12]}", task_queue=BARE_QUEUE
    )
    seconds = await timed_turns(lambda n: session.execute_update(BareSessionWorkflow.send, f"echo {n}"), turns)
    await session.execute_update(BareSessionWorkflow.close)
    await session.result()
    return seconds


def per_step_ms(runs: list[Run], turns: int) -> float:
    return statistics.median(r.seconds for r in runs) * 1000 / turns


LONG_TURN_CALLS = 5
"""Tool calls in each turn of the second kind of session: with one-call turns, this separates what each step of a
session costs from what each turn (the message's update and its result) costs."""


async def main(turns: int, repeat: int) -> None:
    agent = echo_agent(turns)
    fast_agent = calculator_agent(turns)
    long_turns = max(turns // 4, 3)
    sessions = {
        1: (turns, session_agent(turns)),
        LONG_TURN_CALLS: (long_turns, session_agent(long_turns, LONG_TURN_CALLS)),
    }
    results: dict[str, list[Run]] = {
        "ours": [],
        "bare": [],
        "unsandboxed": [],
        "bare+query": [],
        "typed": [],
        "ours fast": [],
        "bare local": [],
    }
    session_turns: dict[tuple[str, int], list[float]] = {(s, c): [] for s in ("ours", "bare") for c in sessions}
    async with bench_server() as stalwart:
        for measured in [False] + [True] * repeat:
            round_of_runs = {
                "ours": await run_ours(stalwart, agent, "echo until done"),
                "bare": await run_bare(stalwart, BareStepsWorkflow.run, turns, False),
                "unsandboxed": await run_bare(stalwart, UnsandboxedBareStepsWorkflow.run, turns, False),
                "bare+query": await run_bare(stalwart, BareStepsWorkflow.run, turns, True),
                "typed": await run_bare(stalwart, TypedStepsWorkflow.run, turns, 0.0),
                "ours fast": await run_ours(stalwart, fast_agent, "calculate until done"),
                "bare local": await run_bare(stalwart, BareLocalToolStepsWorkflow.run, turns),
            }
            round_of_sessions = {}
            for calls, (count, session) in sessions.items():
                round_of_sessions["ours", calls] = await our_session(stalwart, session, count)
                round_of_sessions["bare", calls] = await bare_session(stalwart, count, calls)
            if measured:
                for name, run in round_of_runs.items():
                    results[name].append(run)
                for key, seconds in round_of_sessions.items():
                    session_turns[key] += seconds
            else:  # the start's and warm-up's garbage, else its full collection (120 ms) lands in a measured run
                gc.collect()
    print(f"{turns} turns per run, {repeat} runs of each after one warm-up; per step = median run / {turns}")
    for name, runs in results.items():
        run_ms = ", ".join(f"{r.seconds * 1000:.0f}" for r in runs)
        print(
            f"{name:>10}: {per_step_ms(runs, turns):5.1f} ms per step  (runs: {run_ms} ms)  "
            f"history: {runs[0].events} events, {runs[0].history_bytes} bytes, {runs[0].activities} activities"
        )
    turn_ms = {key: statistics.median(seconds) * 1000 for key, seconds in session_turns.items()}
    print(
        f"session turns (a message, then tool-calling steps: model, tool, ..., model), median of every turn but "
        f"each session's first, {repeat} sessions of each:"
    )
    print(
        f"  {LONG_TURN_CALLS} tool calls a turn: ours {turn_ms['ours', LONG_TURN_CALLS]:.1f} ms, "
        f"bare {turn_ms['bare', LONG_TURN_CALLS]:.1f} ms; ratio "
        f"{turn_ms['ours', LONG_TURN_CALLS] / turn_ms['bare', LONG_TURN_CALLS]:.2f}"
    )
    step = {
        side: (turn_ms[side, LONG_TURN_CALLS] - turn_ms[side, 1]) / (LONG_TURN_CALLS - 1) for side in ("ours", "bare")
    }
    print(
        f"  a step in a session (each tool call a turn adds): ours {step['ours']:.1f} ms, bare {step['bare']:.1f} ms; "
        f"ratio {step['ours'] / step['bare']:.2f}; the turn itself (the rest of a one-call turn): "
        f"ours {turn_ms['ours', 1] - step['ours']:.1f} ms, bare {turn_ms['bare', 1] - step['bare']:.1f} ms"
    )
    print(
        f"  1 tool call a turn: ours {turn_ms['ours', 1]:.1f} ms, bare {turn_ms['bare', 1]:.1f} ms; "
        f"session turn ratio: {turn_ms['ours', 1] / turn_ms['bare', 1]:.2f}"
    )
    print(f"ours over typed: {per_step_ms(results['ours'], turns) / per_step_ms(results['typed'], turns):.2f}")
    unsandboxed = per_step_ms(results["ours"], turns) / per_step_ms(results["unsandboxed"], turns)
    print(f"ours over bare outside the sandbox (as AgentWorkflow runs): {unsandboxed:.2f}")
    rounds = sorted(ours.seconds / bare.seconds for ours, bare in zip(results["ours"], results["bare"], strict=True))
    print(
        f"ours over bare in each measured round, sorted: {', '.join(f'{r:.2f}' for r in rounds)} (the spread is this "
        f"machine's noise: a ratio within it of 1.15 has not settled which side of the target it is on)"
    )
    fast = per_step_ms(results["ours fast"], turns)
    print(
        f"a step whose tool is fast (calculator, a local activity): ours {fast:.1f} ms, bare with a local activity "
        f"{per_step_ms(results['bare local'], turns):.1f} ms, ours with echo {per_step_ms(results['ours'], turns):.1f} "
        "ms"
    )
    print(f"fast tool ratio: {fast / per_step_ms(results['bare'], turns):.2f}")
    print(f"ratio: {per_step_ms(results['ours'], turns) / per_step_ms(results['bare'], turns):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=count, default=20, help="tool-calling turns per run (default 20)")
    parser.add_argument("--repeat", type=count, default=5, help="measured runs of each workflow (default 5)")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.repeat))
