"""How a session grows with its turns, and what an idle session costs a worker.

A session on the `scripted` model gets N messages of B bytes (default 1 KB) and
answers each with B bytes, so the content a session carries after N turns is
2*B*N. It runs to 10, 100 and 1,000 turns twice: with `[session]
continue_as_new_events` at its default (continue as new when Temporal
suggests it) and at a low value (500 events). At each size it prints:

- history: the bytes of the largest run of the continue-as-new chain and of all
  its runs together (protobuf size, what Temporal's limits count), over the content;
- storage: the bytes added under `STALWART_STORAGE` (a fresh temporary folder),
  over the content, split into stored conversations (`transcripts/`) and
  payloads too large for history (`v0/`);
- model input: the messages the model was sent at the last turn, as rebuilt by
  `SessionHandle.model_input`, absolute and over the content; the agent's
  `[context] max_input_tokens` is 20,000, so the window caps it.

Then the worker's memory: 200 sessions are started and sent one B-byte message
each, and this process, which runs the worker, is measured before and after; the
baseline is 200 bare workflows (`IdleWorkflow`, sandboxed like ours) that take one
such message by update and wait on a condition. Both kinds stay open and are
started in batches ordered bare-session-session-bare, so drift weighs on both
alike. What is compared is Python's heap as `tracemalloc` traces it: it holds
the workflows' objects and nothing else, so it barely moves with the count
(2.6-2.7 at 3 of each, 2.4-2.5 at 40 and at 200). It leaves out what the SDK's
Rust core keeps per workflow, the same machinery for both kinds. The resident
set (VmRSS) is printed beside it, but it moves with the allocator's arenas by
more than a hundred idle workflows hold (at 3 of each it was sometimes negative).
The last line is `ratio: X.XX`, heap per idle session over heap per idle bare
workflow.

The answers come from the `scripted` model replaced, in this process, by one
that answers model call N with `answer N:` and B bytes, rather than from the
agent's `scripted` list, so that the agent spec (which travels in the input of
every run of the chain) stays small and the figures are the session's own. About 2.5
minutes on two cores.

    .venv/bin/python -m bench.session_growth [--turns 10 100 1000] [--content-bytes 1024]
        [--low-events 500] [--idle 200] [--max-input-tokens 20000] [--settle 1]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import sys
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.options import count, seconds

# The SDK, the worker and the contracts are loaded where they are used, after argparse: `--help` or a refused option
# answers without their seconds of imports. The bare idle workflow is `baselines.IdleWorkflow`, with the others.
if TYPE_CHECKING:
    from temporalio.worker import Worker

    from stalwart.client.api import SessionHandle, StalwartClient
    from stalwart.contracts.activities import ModelContext
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import AssistantTurn
    from stalwart.contracts.run import AgentResult

IDLE_QUEUE = "bench-idle"
SENDS_AT_ONCE = 16


def text_of(size: int, label: str) -> str:
    """`size` ASCII characters (so bytes) starting with `label`."""
    return (label + " " + "lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]


class NumberedAnswers:
    """Answers model call N with `answer N:` and filler up to `size` bytes."""

    def __init__(self, size: int) -> None:
        self._size = size

    async def complete(self, context: ModelContext) -> AssistantTurn:
        from stalwart.contracts.messages import AssistantTurn

        return AssistantTurn(text=text_of(self._size, f"answer {context.step}:"), model="scripted")


def session_agent(continue_as_new_events: int | None, max_input_tokens: int) -> AgentSpec:
    from stalwart.contracts.agent import AgentSpec, ContextSettings, SessionSettings

    return AgentSpec(
        name="bench-session",
        session=SessionSettings(continue_as_new_events=continue_as_new_events),
        context=ContextSettings(max_input_tokens=max_input_tokens),
    )


def rss_bytes() -> int:
    """This process's resident set now (VmRSS); the peak (ru_maxrss) where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


@dataclass
class Point:
    """A session measured after `turns` turns."""

    turns: int
    content: int
    runs: int
    max_history: int
    total_history: int
    max_events: int
    transcripts: int
    payloads: int
    input_bytes: int
    input_messages: int
    seconds_per_turn: float
    """Mean `send` round trip over the turns since the previous size."""
    by_event: dict[str, int]
    """History bytes of every run of the chain by event type: where a turn's bytes go."""

    @property
    def storage(self) -> int:
        return self.transcripts + self.payloads


async def measure(handle: SessionHandle, last: AgentResult, turns: int, content: int, root: Path) -> Point:
    from pydantic import TypeAdapter
    from temporalio.api.enums.v1 import EventType
    from temporalio.api.history.v1 import History

    from bench.harness import storage_bytes
    from stalwart.contracts.messages import Message

    histories = await handle.histories()
    sizes = [History(events=h.events).ByteSize() for h in histories]
    by_event: dict[str, int] = {}
    for history in histories:
        for event in history.events:
            name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
            by_event[name] = by_event.get(name, 0) + event.ByteSize()
    step = max(record.step for record in last.steps)
    sent = await handle.model_input(step)
    stored = storage_bytes(root)
    return Point(
        turns=turns,
        content=content,
        runs=len(histories),
        max_history=max(sizes),
        total_history=sum(sizes),
        max_events=max(len(h.events) for h in histories),
        transcripts=stored["transcripts"],
        payloads=stored["payloads"],
        input_bytes=len(TypeAdapter(list[Message]).dump_json(sent.messages)),
        input_messages=len(sent.messages),
        seconds_per_turn=0.0,
        by_event=by_event,
    )


async def grow(
    stalwart: StalwartClient, agent: AgentSpec, checkpoints: list[int], size: int, root: Path
) -> list[Point]:
    """One session sent `checkpoints[-1]` messages, measured after each checkpoint; storage is the session's own."""
    from bench.harness import storage_bytes

    before = storage_bytes(root)
    handle = await stalwart.start_session(agent)
    points: list[Point] = []
    sending, previous = 0.0, 0
    for turn in range(1, checkpoints[-1] + 1):
        started = time.perf_counter()
        result = await handle.send(text_of(size, f"message {turn}:"))
        sending += time.perf_counter() - started
        if result.stop_reason != "done" or len(result.answer) != size:
            raise RuntimeError(f"turn {turn} stopped with {result.stop_reason}: {result.error}")
        if turn in checkpoints:
            point = await measure(handle, result, turn, 2 * size * turn, root)
            point.transcripts -= before["transcripts"]
            point.payloads -= before["payloads"]
            point.seconds_per_turn = sending / (turn - previous)
            points.append(point)
            sending, previous = 0.0, turn
    await handle.close()
    return points


async def send_all(send: Callable[[int], Awaitable[None]], count: int) -> None:
    limit = asyncio.Semaphore(SENDS_AT_ONCE)

    async def one(n: int) -> None:
        async with limit:
            await send(n)

    await asyncio.gather(*(one(n) for n in range(count)))


@dataclass
class Memory:
    """This process's memory at one moment: Python's heap as traced, and the resident set."""

    heap: int
    rss: int

    def __sub__(self, other: Memory) -> Memory:
        return Memory(heap=self.heap - other.heap, rss=self.rss - other.rss)

    def __add__(self, other: Memory) -> Memory:
        return Memory(heap=self.heap + other.heap, rss=self.rss + other.rss)


async def settled_memory(settle: float) -> Memory:
    await asyncio.sleep(settle)  # let the last workflow tasks and activity completions land
    gc.collect()
    return Memory(heap=tracemalloc.get_traced_memory()[0], rss=rss_bytes())


async def idle_memory(
    stalwart: StalwartClient, agent: AgentSpec, count: int, size: int, settle: float
) -> tuple[Memory, Memory]:
    """Memory added per idle bare workflow and per idle session, `count` of each, all kept open.

    Python's heap is traced (`tracemalloc`) from after the first of each kind: it counts what
    the workflows' objects hold and nothing else, so it is steady at any count. The resident set
    also moves with the allocator's arenas and pages, by more than a hundred idle workflows hold,
    so it is printed for the whole picture but is noise below a few hundred of each.

    They are started in four batches, bare-session-session-bare, so that whatever drifts while
    the process runs (caches filling) weighs on both kinds alike.
    """
    from bench.baselines import IdleWorkflow

    bare_ids: list[str] = []
    sessions: list[SessionHandle] = []
    message = text_of(size, "hello")

    async def bare(_: int) -> None:
        workflow_id = f"bench-idle-{uuid.uuid4().hex[:12]}"
        bare_ids.append(workflow_id)
        handle = await stalwart.temporal.start_workflow(IdleWorkflow.run, id=workflow_id, task_queue=IDLE_QUEUE)
        await handle.execute_update(IdleWorkflow.send, message)

    async def session(_: int) -> None:
        handle = await stalwart.start_session(agent)
        sessions.append(handle)
        result = await handle.send(message)
        if result.stop_reason != "done":
            raise RuntimeError(f"idle session {handle.run_id} stopped with {result.stop_reason}: {result.error}")

    # One of each first, so the deltas hold no first-use costs (imports, sandbox, caches).
    await bare(0)
    await session(0)
    tracemalloc.start()
    added = {bare: Memory(0, 0), session: Memory(0, 0)}
    half = count // 2
    for start, batch in ((bare, half), (session, half), (session, count - half), (bare, count - half)):
        before = await settled_memory(settle)
        await send_all(start, batch)
        added[start] += await settled_memory(settle) - before
    tracemalloc.stop()

    async def stop(n: int) -> None:
        await stalwart.temporal.get_workflow_handle(bare_ids[n]).signal(IdleWorkflow.stop)
        await sessions[n].close()

    await send_all(stop, count + 1)
    return added[bare], added[session]


def idle_worker(stalwart: StalwartClient) -> Worker:
    """A worker for the bare idle workflow, sandboxed like ours.

    Its module is passed through rather than re-imported into each workflow's sandbox: the
    baseline is the class alone, without the benchmarks' other code (the agent workflow's module
    is re-imported per workflow, and that cost is ours).
    """
    from temporalio.worker import Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from bench.baselines import IdleWorkflow

    restrictions = SandboxRestrictions.default.with_passthrough_modules(IdleWorkflow.__module__)
    return Worker(
        stalwart.temporal,
        task_queue=IDLE_QUEUE,
        workflows=[IdleWorkflow],
        workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
    )


def kb(size: float) -> str:
    return f"{size / 1024:,.1f}"


def print_points(label: str, points: list[Point]) -> None:
    print(f"\n{label}")
    print(
        f"{'turns':>5} {'content':>8} {'runs':>4} {'events':>6} {'largest run':>17} {'all runs':>17} "
        f"{'storage':>17} {'transcripts':>11} {'payloads':>9} {'model input':>16} {'msgs':>4} {'ms/turn':>7}"
    )
    for p in points:
        print(
            f"{p.turns:>5} {kb(p.content):>8} {p.runs:>4} {p.max_events:>6} "
            f"{kb(p.max_history):>9} {p.max_history / p.content:>6.2f}x "
            f"{kb(p.total_history):>9} {p.total_history / p.content:>6.2f}x "
            f"{kb(p.storage):>9} {p.storage / p.content:>6.2f}x {kb(p.transcripts):>11} {kb(p.payloads):>9} "
            f"{kb(p.input_bytes):>8} {p.input_bytes / p.content:>6.3f}x {p.input_messages:>4} "
            f"{p.seconds_per_turn * 1000:>7.1f}"
        )
    last = points[-1]
    biggest = sorted(last.by_event.items(), key=lambda item: -item[1])[:6]
    print(
        f"  at {last.turns} turns, history per turn by event: "
        + ", ".join(f"{name} {kb(size / last.turns)} KB" for name, size in biggest)
    )
    for a, b in zip(points, points[1:], strict=False):
        turns = b.turns - a.turns
        print(
            f"  {a.turns}->{b.turns}, per added turn: history {kb((b.total_history - a.total_history) / turns)} KB, "
            f"storage {kb((b.storage - a.storage) / turns)} KB "
            f"(transcripts {kb((b.transcripts - a.transcripts) / turns)} KB, "
            f"payloads {kb((b.payloads - a.payloads) / turns)} KB), content {kb((b.content - a.content) / turns)} KB"
        )


async def main(
    checkpoints: list[int], size: int, low_events: int, idle: int, max_input_tokens: int, settle: float
) -> None:
    from bench.harness import bench_server, scratch_storage
    from stalwart.activities import providers

    began = time.perf_counter()
    configs = {"default (Temporal's suggestion)": None, f"continue_as_new_events={low_events}": low_events}
    with scratch_storage() as root:
        assert root is not None
        async with bench_server() as stalwart, idle_worker(stalwart):
            providers.PROVIDERS["scripted"] = lambda agent, clients: NumberedAnswers(size)
            bare_added, session_added = await idle_memory(
                stalwart, session_agent(None, max_input_tokens), idle, size, settle
            )
            grown = {
                label: await grow(stalwart, session_agent(events, max_input_tokens), checkpoints, size, root)
                for label, events in configs.items()
            }
    print(
        f"one session per configuration: {size} B messages, {size} B answers (content = {2 * size} B a turn); "
        f"[context] max_input_tokens={max_input_tokens:,}; sizes in KB, Nx = over the content so far"
    )
    print("largest run, all runs: history bytes (protobuf) of the chain's runs; events: of the largest run")
    print("storage: bytes the session added under STALWART_STORAGE (conversations + payloads too big for history)")
    print("model input: the messages the model was sent at the last turn; ms/turn: mean send() since the last size")
    for label, points in grown.items():
        print_points(label, points)
    print(f"\nworker memory with {idle} idle workflows of each kind, each sent one {size} B message")
    print("  heap: Python's, traced; RSS: VmRSS of this process, noise below a few hundred of each")
    for label, added in (("bare workflow", bare_added), ("session", session_added)):
        print(f"  {label + ':':<14} heap {kb(added.heap / idle):>7} KB each, RSS {kb(added.rss / idle):>7} KB each")
    print(f"whole benchmark: {time.perf_counter() - began:.0f} s")
    print(f"ratio: {session_added.heap / bare_added.heap:.2f} (heap per idle session over per idle bare workflow)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=count, nargs="+", default=[10, 100, 1000], help="sizes measured (10 100 1000)")
    parser.add_argument("--content-bytes", type=count, default=1024, help="bytes of each message and answer (1024)")
    parser.add_argument("--low-events", type=count, default=500, help="the low continue_as_new_events (500)")
    parser.add_argument("--idle", type=count, default=200, help="idle sessions and bare workflows (200)")
    parser.add_argument("--max-input-tokens", type=count, default=20_000, help="[context] max_input_tokens (20000)")
    parser.add_argument(
        "--settle", type=seconds, default=1.0, help="seconds before each memory reading, for the last tasks to land (1)"
    )
    args = parser.parse_args()
    if args.idle < 2 or args.content_bytes < 16:
        parser.error("--idle needs 2 or more, --content-bytes 16 or more")
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(
        main(
            sorted(set(args.turns)), args.content_bytes, args.low_events, args.idle, args.max_input_tokens, args.settle
        )
    )
