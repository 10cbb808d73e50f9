"""The `stalwart` command: run agents, serve workers, inspect runs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Coroutine, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from stalwart.client import render
from stalwart.client.agent_files import AgentFileError, load_agent
from stalwart.client.api import RunHandle, RunWithoutResult, StalwartClient
from stalwart.client.connection import connect, default_address, default_namespace
from stalwart.client.stream import AnswerDelta
from stalwart.contracts.model_choice import choose_model
from stalwart.contracts.names import TASK_QUEUE, WORKFLOW_TYPE

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2

EPILOG = f"""\
examples:
  stalwart run --dev agents/calculator.toml "What is (17 * 23) + 4?"
  stalwart dev                          # Temporal dev server + UI on :8233 + a worker
  stalwart run agents/calculator.toml "What is 2**10?"   # against TEMPORAL_ADDRESS
  stalwart show RUN_ID --events
  stalwart runs --query 'AgentStatus="done"'

Runs are Temporal workflows of type {WORKFLOW_TYPE!r} on task queue {TASK_QUEUE!r}; any Temporal
client can start one with the JSON input {{"agent": {{...agent spec...}}, "goal": "..."}}.
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_USAGE
    try:
        return asyncio.run(_until_terminated(args.handler(args)))
    except AgentFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except RunWithoutResult as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except ConnectionError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            print(f"error: {err.message}. `stalwart runs` lists the runs of this namespace.", file=sys.stderr)
        else:
            print(
                f"error: Temporal answered {err.status.name if err.status else 'an error'}: {err.message}",
                file=sys.stderr,
            )
        return EXIT_RUN_FAILED
    except KeyboardInterrupt:
        return 130


def _versions() -> str:
    """Stalwart's version and the Temporal SDK's, the two a bug report needs."""
    return f"stalwart {metadata.version('stalwart')} (temporalio {metadata.version('temporalio')})"


async def _until_terminated(command: Coroutine[Any, Any, int]) -> int:
    """Run a command; SIGTERM unwinds it like Ctrl-C, so an embedded dev server is stopped, not orphaned."""
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await command
    except asyncio.CancelledError:
        return 143


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stalwart",
        description="Durable AI agents on Temporal: every step recorded, every budget enforced, every run replayable.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_versions())
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name: str, handler, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    run = command("run", _run, "Start a run of an agent and follow it to its answer.")
    run.add_argument("agent", type=Path, help="agent file (TOML), e.g. agents/calculator.toml")
    run.add_argument("goal", help="what the agent should do")
    run.add_argument(
        "--input", action="append", default=[], metavar="NAME=VALUE", help="a run input for tool bindings (repeatable)"
    )
    run.add_argument("--dev", action="store_true", help="start an embedded Temporal dev server and worker for this run")
    run.add_argument(
        "--keep", action="store_true", help="with --dev: keep the server and UI up after the run until Ctrl-C"
    )
    run.add_argument("--no-follow", action="store_true", help="print the run id and return without waiting")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument(
        "--approve-all",
        action="store_true",
        help="approve every tool call that asks for approval (otherwise: ask on a terminal)",
    )
    _dev_options(run)
    _worker_options(run)
    _connection_options(run)

    worker = command("worker", _worker, "Run a worker: executes agent runs, model calls and tools.")
    _worker_options(worker)
    _connection_options(worker)

    dev = command("dev", _dev, "Start the Temporal dev server (SQLite, Web UI) and a worker, until Ctrl-C.")
    _dev_options(dev)
    _worker_options(dev)

    show = command("show", _show, "Print the step log of a run, running or finished.")
    show.add_argument("run_id")
    show.add_argument("--events", action="store_true", help="print the KAOS-style event list instead")
    show.add_argument("--json", action="store_true", help="print as JSON")
    _connection_options(show)

    runs = command("runs", _runs, "List runs with their search attributes.")
    runs.add_argument("--query", help="Temporal visibility query, e.g. 'AgentStatus=\"done\" AND AgentTokens > 100'")
    runs.add_argument("--limit", type=int, default=20)
    _connection_options(runs)

    cancel = command("cancel", _cancel, "Cancel a run; it ends `cancelled` and keeps its steps.")
    cancel.add_argument("run_id")
    _connection_options(cancel)

    pending = command("pending", _pending, "List tool calls waiting for approval (of one run, or of all runs).")
    pending.add_argument("run_id", nargs="?")
    _connection_options(pending)

    for name, approved, summary in (
        ("approve", True, "Approve a waiting tool call so it runs."),
        ("reject", False, "Reject a waiting tool call; the model reads the reason as its result."),
    ):
        decide = command(name, _decide, summary)
        decide.add_argument("run_id")
        decide.add_argument("call_id", help="the call's id, as `stalwart pending` lists it")
        decide.add_argument("--reason", required=not approved, default=None)
        decide.add_argument("--reviewer", default=None, help="who decided (recorded in the run)")
        decide.set_defaults(approved=approved)
        _connection_options(decide)

    check = command("check", _check, "Validate an agent file and print the spec it describes.")
    check.add_argument("agent", type=Path)
    return parser


def _connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--address", default=None, help=f"Temporal frontend (default: $TEMPORAL_ADDRESS or {default_address()})"
    )
    parser.add_argument(
        "--namespace", default=None, help=f"Temporal namespace (default: $TEMPORAL_NAMESPACE or {default_namespace()})"
    )
    parser.add_argument("--task-queue", default=TASK_QUEUE, help=f"task queue of the workers (default: {TASK_QUEUE})")


def _worker_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE and register its @tool functions (repeatable)",
    )


def _dev_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=7233, help="dev server frontend port (default: 7233)")
    parser.add_argument("--ui-port", type=int, default=8233, help="dev server Web UI port (default: 8233)")
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".stalwart"), help="where the dev server keeps its SQLite file"
    )


# -- commands ----------------------------------------------------------------


async def _run(args: argparse.Namespace) -> int:
    spec = load_agent(args.agent)
    inputs = _parse_inputs(args.input)
    async with _temporal(args, embedded=args.dev) as (temporal, ui_url):
        stalwart = StalwartClient(temporal, task_queue=args.task_queue, ui_url=ui_url)
        if not args.dev:
            await _warn_without_workers(temporal, args.task_queue)
        choice = choose_model(spec)
        if args.dev and spec.model != choice.model:  # the embedded worker shares this environment's keys
            spec = spec.model_copy(update={"model": choice.model})
        handle = await stalwart.start(spec, args.goal, inputs=inputs)
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
        approvals = asyncio.create_task(_handle_approvals(handle, approve_all=args.approve_all, out=progress))
        return await _follow(
            handle, as_json=args.json, keep=args.dev and args.keep, embedded=args.dev, approvals=approvals
        )


async def _follow(
    handle: RunHandle, *, as_json: bool, keep: bool, embedded: bool, approvals: asyncio.Task[None]
) -> int:
    """Print the run as it goes, then its result; `approvals` (its approval handling) stops once the run has ended."""
    try:
        if not as_json:
            await _print_live(handle)
        result = await handle.result()
    finally:
        approvals.cancel()
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


async def _print_live(handle: RunHandle) -> None:
    """Print each step as it finishes and the answer's words as the model writes them, in one readable stream."""
    line = render.LiveLine(sys.stdout)

    async def steps() -> None:
        async for step in handle.watch(poll_interval=0.1):
            line.step(step)

    async def answer() -> None:
        async for event in handle.stream():
            if isinstance(event, AnswerDelta):
                line.delta(event.step, event.text)
            else:
                line.retract(event.step)

    await asyncio.gather(steps(), answer())
    line.close()


async def _handle_approvals(handle: RunHandle, *, approve_all: bool, out: TextIO) -> None:
    """While a run is followed, answer its approval requests: all, by asking on a terminal, or by saying how."""
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
            elif sys.stdin.isatty():
                answer = await asyncio.to_thread(input, "  approve? [y/N] ")
                if answer.strip().lower() in ("y", "yes"):
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


async def _pending(args: argparse.Namespace) -> int:
    stalwart = await StalwartClient.connect(args.address, args.namespace)
    runs = (
        [(args.run_id, await stalwart.get(args.run_id).pending_approvals())]
        if args.run_id
        else await stalwart.awaiting_approval()
    )
    render.print_pending(runs, sys.stdout)
    return EXIT_OK


async def _decide(args: argparse.Namespace) -> int:
    from temporalio.client import WorkflowUpdateFailedError

    handle = (await StalwartClient.connect(args.address, args.namespace)).get(args.run_id)
    try:
        if args.approved:
            await handle.approve(args.call_id, reason=args.reason, reviewer=args.reviewer)
        else:
            await handle.reject(args.call_id, reason=args.reason, reviewer=args.reviewer)
    except WorkflowUpdateFailedError as err:
        print(f"error: {err.cause or err}. `stalwart pending {args.run_id}` lists the calls waiting.", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'approved' if args.approved else 'rejected'} call {args.call_id} of run {args.run_id}")
    return EXIT_OK


async def _worker(args: argparse.Namespace) -> int:
    from stalwart.workers.search_attributes import ensure_search_attributes
    from stalwart.workers.worker import build_worker, default_registry

    registry = default_registry(args.tools)
    temporal = await connect(args.address, args.namespace)
    added = await ensure_search_attributes(temporal)
    if added:
        print(f"registered search attributes: {', '.join(added)}", file=sys.stderr)
    print(
        f"worker polling task queue {args.task_queue!r} on {args.address or default_address()} "
        f"with tools: {', '.join(registry.names())}",
        file=sys.stderr,
    )
    async with build_worker(temporal, registry=registry, task_queue=args.task_queue):
        await asyncio.Event().wait()
    return EXIT_OK


async def _dev(args: argparse.Namespace) -> int:
    args.address, args.namespace, args.task_queue = None, None, TASK_QUEUE
    async with _temporal(args, embedded=True) as (_, ui_url):
        print(f"Temporal dev server on 127.0.0.1:{args.port}, data in {args.data_dir}", file=sys.stderr)
        print(f"Temporal UI: {ui_url}", file=sys.stderr)
        print(
            "A worker is running; start runs from another shell with `stalwart run AGENT GOAL`. Ctrl-C stops.",
            file=sys.stderr,
        )
        await asyncio.Event().wait()
    return EXIT_OK


async def _show(args: argparse.Namespace) -> int:
    stalwart = await StalwartClient.connect(args.address, args.namespace)
    handle = stalwart.get(args.run_id)
    if args.events:
        events = await handle.events()
        if args.json:
            print(json.dumps([e.model_dump(mode="json") for e in events], indent=2))
        else:
            render.print_events(events, sys.stdout)
        return EXIT_OK
    state = await handle.state()
    if args.json:
        print(state.model_dump_json(indent=2))
    else:
        render.print_state(args.run_id, state, handle.ui_url, sys.stdout)
    return EXIT_OK


async def _runs(args: argparse.Namespace) -> int:
    stalwart = await StalwartClient.connect(args.address, args.namespace)
    render.print_runs(await stalwart.list(args.query, limit=args.limit), sys.stdout)
    return EXIT_OK


async def _cancel(args: argparse.Namespace) -> int:
    stalwart = await StalwartClient.connect(args.address, args.namespace)
    await stalwart.get(args.run_id).cancel()
    print(f"cancellation requested for {args.run_id}; `stalwart show {args.run_id}` shows where it stopped")
    return EXIT_OK


async def _check(args: argparse.Namespace) -> int:
    spec = load_agent(args.agent)
    print(spec.model_dump_json(indent=2, exclude_defaults=True))
    print(f"ok: {args.agent} describes agent {spec.name!r}", file=sys.stderr)
    return EXIT_OK


# -- plumbing ----------------------------------------------------------------


@contextlib.asynccontextmanager
async def _temporal(args: argparse.Namespace, *, embedded: bool) -> AsyncIterator[tuple[Client, str | None]]:
    """A client; with `embedded`, on a dev server started here, with a worker running beside it."""
    if not embedded:
        yield await connect(args.address, args.namespace), None
        return
    from stalwart.workers.dev_server import DevServer
    from stalwart.workers.worker import build_worker, default_registry

    registry = default_registry(args.tools)
    server = DevServer(port=args.port, ui_port=args.ui_port, db_file=args.data_dir / "temporal.db")
    print(f"starting the Temporal dev server ({server.db_file}) …", file=sys.stderr)
    async with server:
        temporal = await connect(server.address)
        async with build_worker(temporal, registry=registry, task_queue=args.task_queue):
            yield temporal, server.ui_url


async def _warn_without_workers(temporal: Client, task_queue: str) -> None:
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    try:
        described = await temporal.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=temporal.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
    except Exception:
        return
    if not described.pollers:
        print(
            f"warning: no worker is polling task queue {task_queue!r}; the run will wait until one starts. "
            f"Start one with `stalwart worker`, or use `stalwart run --dev` for an embedded server and worker.",
            file=sys.stderr,
        )


def _parse_inputs(pairs: list[str]) -> dict[str, object]:
    inputs: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise AgentFileError(f"--input {pair!r}: write it as NAME=VALUE")
        try:
            inputs[name] = json.loads(value)
        except json.JSONDecodeError:
            inputs[name] = value
    return inputs


def console_main() -> None:
    """The `stalwart` executable: `main`, then an exit that skips interpreter teardown.

    Temporal's Rust core keeps threads that can call into Python while CPython finalizes, and a
    short-lived client process then aborts with `Fatal Python error: PyGILState_Release`
    (temporalio/sdk-python#300) after its work is done: 4 of 80 `stalwart approve` runs on a busy
    machine. Everything a command owns (dev server, worker, connections) is closed by the time
    `main` returns, so flushing and `os._exit` lose nothing and keep the exit code honest.
    """
    code = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that went away (`stalwart runs | head`)
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    console_main()
