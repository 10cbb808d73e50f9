"""`stalwart run`: start a run and follow it to its answer; `cancel`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, TextIO

from stalwart.client import render
from stalwart.client.commands import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, approvals, connecting, ended
from stalwart.client.commands.inputs import parse_inputs, text_of

if TYPE_CHECKING:
    from stalwart.client.api import RunHandle


async def run(args: argparse.Namespace) -> int:
    from stalwart.client.agent_files import load_agent
    from stalwart.client.api import StalwartClient
    from stalwart.contracts.model_choice import choose_model

    if args.tools and not args.dev:
        print(
            "error: --tools loads tools into the embedded worker of --dev; the worker that runs this agent takes "
            "them itself: `stalwart worker --tools MODULE`",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not args.dev and (dev_only := _dev_only_options(args)):
        print(
            f"error: {', '.join(dev_only)} set the embedded dev server of --dev: add --dev, or leave them out to "
            "run on the Temporal server --address names",
            file=sys.stderr,
        )
        return EXIT_USAGE
    spec = load_agent(args.agent)
    goal = await text_of(args, "goal")
    inputs = parse_inputs(args.input)
    async with connecting.temporal(args, embedded=args.dev) as (temporal, ui_url):
        stalwart = StalwartClient(temporal, task_queue=args.task_queue, ui_url=ui_url)
        if not args.dev:
            await connecting.warn_without_workers(temporal, args.task_queue)
        choice = choose_model(spec)
        if args.dev and spec.model != choice.model:  # the embedded worker shares this environment's keys
            spec = spec.model_copy(update={"model": choice.model})
        handle = await stalwart.start(spec, goal, inputs=inputs)
        progress = sys.stderr if args.json else sys.stdout  # with --json, stdout holds the result's JSON alone
        # Only the embedded worker shares this shell's keys; a remote worker decides with its own.
        said = (
            choice.reason if args.dev else f"guessed from this shell's environment, the worker decides: {choice.reason}"
        )
        print(f"run {handle.run_id} · agent {spec.name} · model {choice.model} ({said})", file=progress)
        print(f"Temporal UI: {handle.ui_url}", file=progress, flush=True)
        if args.no_follow:
            print(handle.run_id)
            return EXIT_OK
        deciding = asyncio.create_task(
            approvals.handle_approvals(handle, approve_all=args.approve_all, out=progress, ask=approvals.terminal())
        )
        return await _follow(
            handle, as_json=args.json, keep=args.dev and args.keep, embedded=args.dev, deciding=deciding
        )


async def _warn_of_a_failing_task(handle: RunHandle, every: float = 3.0) -> None:
    """Say once, on stderr, that a worker fails the run's workflow task: the run would wait with nothing said."""
    from temporalio.service import RPCError

    while True:
        await asyncio.sleep(every)
        try:
            note = await handle.failing_task()
        except RPCError:  # the server busy for a moment: the next look will tell
            continue
        if note is not None:
            print(f"warning: {note}", file=sys.stderr, flush=True)
            return


async def say_what_the_run_waits_out(handle: RunHandle, out: TextIO, every: float = 2.0) -> None:
    """Say once, on `out`, each wait the run sits out on a durable timer (a provider's long Retry-After): no step
    ends and no word is written for as long as it lasts, minutes or hours."""
    said: set[str] = set()
    while True:
        await asyncio.sleep(every)
        try:
            waiting = (await handle.state()).waiting
        except Exception:  # the server or the worker busy for a moment: the next look will tell
            continue
        if waiting is not None and waiting not in said:
            said.add(waiting)
            print(f"waiting: {waiting}", file=out, flush=True)


async def _follow(handle: RunHandle, *, as_json: bool, keep: bool, embedded: bool, deciding: asyncio.Task[None]) -> int:
    """Print the run as it goes, then its result; `deciding` (its approval handling) stops once the run has ended."""
    watching = asyncio.create_task(_warn_of_a_failing_task(handle))
    waits = asyncio.create_task(say_what_the_run_waits_out(handle, sys.stderr))
    try:
        if not as_json:
            await print_live(handle)
        result = await handle.result()
    finally:
        deciding.cancel()
        watching.cancel()
        waits.cancel()
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        render.print_result(result, handle.ui_url, sys.stdout)
    if keep:
        print("\nThe dev server and its UI stay up; press Ctrl-C to stop.", file=sys.stderr)
        await asyncio.Event().wait()
    elif embedded:
        print(
            "(the embedded server stops with this command: add --keep to browse the run now, "
            "or run `stalwart dev` later; the run is kept in its SQLite file)",
            file=sys.stderr,
        )
    return EXIT_RUN_FAILED if result.stop_reason in ("error", "cancelled") else EXIT_OK


async def print_live(handle: RunHandle) -> None:
    """Print each step as it finishes and the answer's words as the model writes them, in one readable stream."""
    from stalwart.client.stream import AnswerDelta, Progress

    line = render.LiveLine(sys.stdout)

    async def steps() -> None:
        async for step in handle.watch(poll_interval=0.1, progress=True):
            if isinstance(step, Progress):
                line.progress(step.block)
            else:
                line.step(step)

    async def answer() -> None:
        async for event in handle.stream():
            if isinstance(event, AnswerDelta):
                line.delta(event.step, event.text)
            else:
                line.retract(event.step)

    await asyncio.gather(steps(), answer())
    line.close()


async def cancel(args: argparse.Namespace) -> int:
    handle = (await connecting.client(args)).get(args.run_id)
    # Temporal takes a cancellation of a closed run and does nothing: say so, and how it ended instead.
    if not (description := await handle.describe()).running:
        return ended.already_ended("run", args.run_id, description.how_ended, nothing="cancelled")
    await handle.cancel()
    print(f"cancellation requested for {args.run_id}; `stalwart show {args.run_id}` shows where it stopped")
    return EXIT_OK


def _dev_only_options(args: argparse.Namespace) -> list[str]:
    """The options of the embedded dev server given without --dev, which would do nothing without it."""
    from stalwart.client.cli import DEV_DEFAULTS

    given = [f"--{dest.replace('_', '-')}" for dest, default in DEV_DEFAULTS.items() if getattr(args, dest) != default]
    return (["--keep"] if args.keep else []) + given
