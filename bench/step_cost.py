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
comparison. All run one at a time, interleaved, on one fresh in-memory dev server; the first run of each is a
warm-up. A step is one turn.

"ours fast" calls the built-in `calculator`, a fast tool run as a local activity, instead of `echo`; "bare local"
is the bare workflow with its tool no-ops as local activities, the floor of such a step. Two lines compare them:

- `fast tool ratio:` what a fast tool call costs against a tool call as a bare activity round trip. Each tool
  call's span is read from its run's history, from the server's event times (nanoseconds): from the
  ActivityTaskCompleted of the model call that asked for it to the ActivityTaskScheduled of the next model call,
  everything the tool call adds to a step. For ours fast that is one workflow task, the local activity inside
  it; for bare, two workflow tasks and the tool activity's round trip through the server. The ratio is the
  median span of ours fast over the median span of bare (every tool call of the measured runs); bare local over
  bare, the floor, ours (echo) over bare, and ours fast over the bare workflow outside the sandbox
  ("unsandboxed", as ours runs) are printed beside it, each span split into its workflow tasks' waits and runs
  and its activities.
- `fast step ratio:` the whole step of ours fast over bare's, from the runs' wall clock. A step keeps its model
  call's round trip whatever its tool costs, so this cannot fall far below bare local over bare (0.6-0.7).

    .venv/bin/python -m bench.step_cost [--turns 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.options import count, count_from

if TYPE_CHECKING:  # the rest loads where it is used, after the arguments are parsed: a usage error is said at once
    from temporalio.api.history.v1 import HistoryEvent

    from bench.harness import Run
    from stalwart.client.api import StalwartClient
    from stalwart.contracts.agent import AgentSpec


def echo_agent(turns: int) -> AgentSpec:
    from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall

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
    from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall

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
    from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall

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
    from bench.baselines import BareSessionWorkflow
    from bench.harness import BARE_QUEUE

    session = await stalwart.temporal.start_workflow(
        BareSessionWorkflow.run, calls, id=f"bare-session-{uuid.uuid4().hex[:12]}", task_queue=BARE_QUEUE
    )
    seconds = await timed_turns(lambda n: session.execute_update(BareSessionWorkflow.send, f"echo {n}"), turns)
    await session.execute_update(BareSessionWorkflow.close)
    await session.result()
    return seconds


def model_calls() -> set[str]:
    """The activity types that stand for a model call, ours and the bare workflows'."""
    from bench.baselines import MODEL_NOOP, QUERYING_NOOP
    from stalwart.contracts.names import MODEL_ACTIVITY

    return {MODEL_ACTIVITY, MODEL_NOOP, QUERYING_NOOP}


@dataclass
class ToolCallTime:
    """What one tool call adds to a step, from the server's event times: from the completion of the model call
    that asked for it to the scheduling of the next model call, and the parts of that span."""

    seconds: float
    task_waits: float
    """Workflow tasks, scheduled to started: the server handing the task to a worker."""
    task_runs: float
    """Workflow tasks, started to completed: the worker running the workflow (and a local activity inside it)."""
    activities: float
    """Activities (the tool's), scheduled to completed: a round trip through the server."""
    tasks: int


def tool_call_times(events: Iterable[HistoryEvent]) -> list[ToolCallTime]:
    """Each tool call's span in a run's history: from a model activity's ActivityTaskCompleted to the next model
    activity's ActivityTaskScheduled (the last model call, followed by none, opens no span).

    The server records each event's time in nanoseconds, so a span of a few milliseconds is read to the microsecond,
    free of the client's side of a run (its start, its polling for the result).
    """
    model_call = model_calls()
    kinds: dict[int, str] = {}
    times: list[ToolCallTime] = []
    opened: float | None = None
    waits = runs = activities = 0.0
    tasks = 0
    marks: dict[str, float] = {}
    for event in events:
        at = event.event_time.ToNanoseconds() / 1e9
        if event.HasField("activity_task_scheduled_event_attributes"):
            kind = event.activity_task_scheduled_event_attributes.activity_type.name
            kinds[event.event_id] = kind
            if kind in model_call and opened is not None:
                times.append(ToolCallTime(at - opened, waits, runs, activities, tasks))
                opened = None
            marks[f"activity {event.event_id}"] = at
        elif event.HasField("activity_task_completed_event_attributes"):
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if kinds.get(scheduled) in model_call:
                opened, waits, runs, activities, tasks = at, 0.0, 0.0, 0.0, 0
            elif opened is not None:
                activities += at - marks[f"activity {scheduled}"]
        elif event.HasField("workflow_task_scheduled_event_attributes"):
            marks["task scheduled"] = at
        elif event.HasField("workflow_task_started_event_attributes"):
            marks["task started"] = at
            if opened is not None:
                waits += at - marks["task scheduled"]
        elif event.HasField("workflow_task_completed_event_attributes") and opened is not None:
            runs += at - marks["task started"]
            tasks += 1
    return times


async def read_tool_calls(stalwart: StalwartClient, run: Run) -> list[ToolCallTime]:
    """The tool calls of `run`, read back from its history."""
    from stalwart.client.chain import chain_histories

    histories = await chain_histories(stalwart.temporal, run.workflow_id)
    return tool_call_times(event for history in histories for event in history.events)


def per_step_ms(runs: list[Run], turns: int) -> float:
    return statistics.median(r.seconds for r in runs) * 1000 / turns


LONG_TURN_CALLS = 5
"""Tool calls in each turn of the second kind of session: with one-call turns, this separates what each step of a
session costs from what each turn (the message's update and its result) costs."""


TOOL_CALL_SIDES = {
    "ours fast": "the calculator, a local activity",
    "bare local": "a no-op local activity, the floor",
    "ours": "echo, an activity",
    "bare": "a no-op activity",
    "unsandboxed": "a no-op activity, outside the sandbox as ours runs",
}
"""The runs whose tool calls are timed from their histories, and what their tool is."""


def report_tool_calls(tool_calls: dict[str, list[list[ToolCallTime]]]) -> None:
    """Each side's median tool call and its parts, ours fast over bare in each round, then `fast tool ratio:`,
    ours fast over bare over every call."""
    every = {name: [t for run in runs for t in run] for name, runs in tool_calls.items()}
    median = {name: statistics.median(t.seconds for t in times) * 1000 for name, times in every.items()}
    print(
        "a tool call, from the model call's completion to the next model call's scheduling (server event times; "
        "median of every call, and the median of each part):"
    )
    for name, times in every.items():
        parts = {
            "workflow tasks waiting": statistics.median(t.task_waits for t in times) * 1000,
            "running": statistics.median(t.task_runs for t in times) * 1000,
            "activities": statistics.median(t.activities for t in times) * 1000,
        }
        tasks = statistics.median(t.tasks for t in times)
        print(
            f"{name:>12}: {median[name]:5.2f} ms over {len(times)} calls ({TOOL_CALL_SIDES[name]}); "
            f"{tasks:g} workflow task(s): " + ", ".join(f"{part} {ms:.2f} ms" for part, ms in parts.items())
        )
    print(
        f"ours fast over bare local: {median['ours fast'] / median['bare local']:.2f}; "
        f"floor, bare local over bare: {median['bare local'] / median['bare']:.2f}; "
        f"ours over bare: {median['ours'] / median['bare']:.2f}; ours fast over bare outside the sandbox: "
        f"{median['ours fast'] / median['unsandboxed']:.2f}"
    )
    rounds = sorted(
        statistics.median(t.seconds for t in fast) / statistics.median(t.seconds for t in bare)
        for fast, bare in zip(tool_calls["ours fast"], tool_calls["bare"], strict=True)
    )
    print(f"ours fast over bare in each measured round (median tool call of each run), sorted: {_listed(rounds)}")
    print(f"fast tool ratio: {median['ours fast'] / median['bare']:.2f}")


def _listed(ratios: list[float]) -> str:
    return ", ".join(f"{r:.2f}" for r in ratios)


async def main(turns: int, repeat: int) -> None:
    from bench.baselines import (
        BareLocalToolStepsWorkflow,
        BareStepsWorkflow,
        TypedStepsWorkflow,
        UnsandboxedBareStepsWorkflow,
    )
    from bench.harness import bench_server, run_bare, run_ours

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
    session_rounds: list[float] = []  # ours over bare, one-call turns, each round: the noise around the turn ratio
    async with bench_server() as stalwart:
        for measured in [False] + [True] * repeat:
            round_of_runs = {
                # Each pair compared by a ratio runs back to back, so a burst of the machine's other load tends to
                # fall on both sides of it.
                "ours": await run_ours(stalwart, agent, "echo until done"),
                "bare": await run_bare(stalwart, BareStepsWorkflow.run, turns, False),
                "ours fast": await run_ours(stalwart, fast_agent, "calculate until done"),
                "bare local": await run_bare(stalwart, BareLocalToolStepsWorkflow.run, turns),
                "unsandboxed": await run_bare(stalwart, UnsandboxedBareStepsWorkflow.run, turns, False),
                "bare+query": await run_bare(stalwart, BareStepsWorkflow.run, turns, True),
                "typed": await run_bare(stalwart, TypedStepsWorkflow.run, turns, 0.0),
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
                one_call = [statistics.median(round_of_sessions[side, 1]) for side in ("ours", "bare")]
                session_rounds.append(one_call[0] / one_call[1])
            else:  # the start's and warm-up's garbage, else its full collection (120 ms) lands in a measured run
                gc.collect()
        tool_calls = {name: [await read_tool_calls(stalwart, run) for run in results[name]] for name in TOOL_CALL_SIDES}
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
    print(
        f"  one-call session turns, ours over bare in each measured round, sorted: {_listed(sorted(session_rounds))} "
        "(two readings of the ratio are told apart only outside this spread)"
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
    print(
        f"fast step ratio: {fast / per_step_ms(results['bare'], turns):.2f} (ours fast over bare, whole steps: a model "
        f"call and a tool call; floor, bare local over bare: "
        f"{per_step_ms(results['bare local'], turns) / per_step_ms(results['bare'], turns):.2f})"
    )
    report_tool_calls(tool_calls)
    print(f"ratio: {per_step_ms(results['ours'], turns) / per_step_ms(results['bare'], turns):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--turns",
        type=count_from(2),  # a session's first turn is not timed: one turn leaves its sessions nothing to measure
        default=20,
        help="tool-calling turns per run and per session (default 20; 2 or more)",
    )
    parser.add_argument("--repeat", type=count, default=5, help="measured runs of each workflow (default 5)")
    args = parser.parse_args()
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(args.turns, args.repeat))
