"""Tool calls waiting for a person: listing them, deciding them, and asking on a terminal while a run waits."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import queue
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from stalwart.client import render
from stalwart.client.commands import EXIT_OK, EXIT_USAGE, connecting, ended

if TYPE_CHECKING:
    from stalwart.client.api import RunHandle


async def handle_approvals(handle: RunHandle, *, approve_all: bool, out: TextIO, ask: LineReader | None = None) -> None:
    """While a run is followed, answer its approval requests: all, by asking on a terminal, or by saying how.

    `ask` reads the person's answer (given when stdin is a terminal); without it, the command says how to decide.
    """

    announced: set[tuple[int, str]] = set()  # by step too: a later call may reuse an id
    while True:
        for pending in await handle.pending_approvals():
            if (pending.step, pending.call_id) in announced:
                continue
            announced.add((pending.step, pending.call_id))
            call = f"{pending.tool_name}({json.dumps(pending.arguments)})"
            print(f"    approval needed for {call} · call {pending.call_id}", file=out, flush=True)
            if approve_all:
                await handle.approve(pending.call_id, reviewer="stalwart run --approve-all")
                print("    approved (--approve-all)", file=out, flush=True)
            elif ask is not None:
                answer = await ask.next("  approve? [y/N] ")
                if (answer or "").strip().lower() in ("y", "yes"):
                    await handle.approve(pending.call_id, reviewer="terminal")
                else:
                    await handle.reject(pending.call_id, reason="declined at the terminal", reviewer="terminal")
            else:
                print(
                    f"    decide with `stalwart approve {handle.run_id} {pending.call_id}` or "
                    f"`stalwart reject {handle.run_id} {pending.call_id} --reason ...`; "
                    f"unanswered, it is rejected at {pending.expires_at:%Y-%m-%d %H:%M:%S} UTC",
                    file=out,
                    flush=True,
                )
        await asyncio.sleep(0.3)


def terminal() -> LineReader | None:
    """A reader of the person's answers when stdin is a terminal, else None (a pipe, /dev/null: never ask)."""
    return LineReader() if sys.stdin.isatty() else None


class LineReader:
    """Lines of stdin, read on a daemon thread one at a time when asked.

    Not `asyncio.to_thread(input)`: a read still waiting when the command ends would hold
    `asyncio.run` (which joins its executor's threads) until someone pressed Enter.
    """

    def __init__(self) -> None:
        self._asks: queue.SimpleQueue[tuple[Any, Any, str | None]] = queue.SimpleQueue()
        # A line that is not UTF-8 arrives with its bad bytes as surrogates, for the caller to refuse it alone;
        # strict decoding would end the input there, and every line after it with it.
        with contextlib.suppress(AttributeError, ValueError):
            sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]
        threading.Thread(target=self._serve, name="stalwart-stdin", daemon=True).start()

    async def next(self, prompt: str | None = None) -> str | None:
        """The next line (after showing `prompt`, with line editing), or None at the end of input."""

        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        self._asks.put((loop, answer, prompt))
        return await answer

    def _serve(self) -> None:
        while True:
            loop, answer, prompt = self._asks.get()
            try:
                line: str | None = input(prompt) if prompt is not None else sys.stdin.readline() or None
            except (EOFError, OSError, ValueError):
                line = None
            loop.call_soon_threadsafe(lambda a=answer, v=line: a.done() or a.set_result(v))


async def pending(args: argparse.Namespace) -> int:
    from temporalio.service import RPCError

    from stalwart.client.api import AWAITING_APPROVAL

    stalwart = await connecting.client(args)
    # Every waiting run: one left out would be the oldest, the first its approval timeout rejects unseen.
    run_ids = [args.run_id] if args.run_id else [r.run_id for r in await stalwart.list(AWAITING_APPROVAL, limit=None)]
    runs, notes = [], {}
    for run_id in run_ids:  # each run on its own: one that cannot be read does not hide the others
        handle = stalwart.get(run_id)
        try:
            runs.append((run_id, await handle.pending_approvals()))
        except (RPCError, RuntimeError) as err:
            if args.run_id:
                raise
            notes[run_id] = f"could not be read ({err})"
            continue
        if handle.closed:
            notes[run_id] = f"has ended, so none of its calls waits for a decision: `stalwart show {run_id}` says how"
        elif handle.offline:
            notes[run_id] = handle.offline
    render.print_pending(runs, sys.stdout, notes=notes)
    return EXIT_OK


async def decide(args: argparse.Namespace) -> int:

    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    handle = (await connecting.client(args)).get(args.run_id)
    decide = handle.approve if args.approved else handle.reject
    # Temporal's answer to an update of a closed run reads as an unknown id: asked first, it says how the run ended.
    if not (await handle.describe()).running:
        return await _ended(handle, args)
    try:
        decision = asyncio.ensure_future(decide(args.call_id, reason=args.reason, reviewer=args.reviewer))
        done, _ = await asyncio.wait([decision], timeout=_DECISION_PATIENCE_SECONDS)
        if not done:  # a worker must take the decision to the run: say why nothing happens yet
            print(
                f"waiting for a worker: the decision is delivered when a worker for run {args.run_id} polls again "
                "(none has answered yet; start one with `stalwart worker`). Ctrl-C gives up.",
                file=sys.stderr,
                flush=True,
            )
        await decision
    except WorkflowUpdateFailedError as err:  # the API's `DecisionRefused`, saying why
        if isinstance(err.cause, RPCError):  # the run ended after it was asked above
            return await _ended(handle, args)
        print(f"error: {err}. `stalwart pending {args.run_id}` lists the calls waiting.", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'approved' if args.approved else 'rejected'} call {args.call_id} of run {args.run_id}")
    return EXIT_OK


async def _ended(handle: RunHandle, args: argparse.Namespace) -> int:
    """A decision on a run that has ended is refused, saying how it ended (client/commands/ended.py)."""
    return ended.refused(
        "run",
        args.run_id,
        (await handle.describe()).how_ended,
        because=f"none of its calls waits for a decision and call {args.call_id} was not "
        + ("approved" if args.approved else "rejected"),
        instead=f"`stalwart show {args.run_id}` prints what the run did",
    )


_DECISION_PATIENCE_SECONDS = 3.0
"""How long `approve`/`reject` waits quietly before saying it waits for a worker."""
