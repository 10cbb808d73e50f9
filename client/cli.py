"""The `stalwart` command: run agents, talk to sessions, serve workers, inspect runs.

Start-up imports only the standard library, so `stalwart --help` answers at once: each command
imports what it needs (the client, the worker, the dev server) when it runs.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stalwart.client import render
from stalwart.client.commands import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    TASK_QUEUE,
    WORKFLOW_TYPE,
)
from stalwart.client.commands.inputs import not_utf8
from stalwart.client.server_errors import explaining
from stalwart.contracts.errors import InfrastructureError, NotFound, RunFailed, StalwartError, UsageError

EXIT_STATUSES: tuple[tuple[type[StalwartError], int], ...] = (
    (UsageError, EXIT_USAGE),  # nothing was started or changed: fix the command line or the file it names
    (NotFound, EXIT_RUN_FAILED),
    (RunFailed, EXIT_RUN_FAILED),
    (InfrastructureError, EXIT_RUN_FAILED),
    (StalwartError, EXIT_RUN_FAILED),
)
"""The exit status of each branch of the error tree, the first that matches (docs/errors.md)."""

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence


EPILOG = f"""\
examples:
  stalwart run --dev agents/calculator.toml "What is (17 * 23) + 4?"
  stalwart dev                          # Temporal dev server + UI on :8233 + a worker
  stalwart run agents/calculator.toml "What is 2**10?"   # against TEMPORAL_ADDRESS
  stalwart show RUN_ID --events
  stalwart runs --query 'AgentStatus="done"'

sessions (an agent that stays open and answers each message as one turn):
  stalwart session start agents/calculator.toml --id calc-chat
  stalwart send calc-chat "What is (17 * 23) + 4?"
  stalwart send calc-chat "And 2**10?" --no-wait      # a signal: returns at once
  stalwart send calc-chat - < message.md    # the message from stdin (or --file PATH); run takes its goal so too
  stalwart chat calc-chat               # or `stalwart chat AGENT_FILE` for a new session
  stalwart close calc-chat

recording and replaying (the pre-deploy gate):
  stalwart history export RUN_ID -o tests/histories
  stalwart replay tests/histories/       # exit 1 if the code here would decide differently
  stalwart replay --query 'ExecutionStatus="Running"'

Runs are Temporal workflows of type {WORKFLOW_TYPE!r} on task queue {TASK_QUEUE!r}; any Temporal
client can start one with the JSON input {{"agent": {{...agent spec...}}, "goal": "..."}}, and talk to a
session with the signal `message` or the updates `send` and `close`.
"""


SESSION_EPILOG = """\
`session start` starts one; the commands that talk to a session are top-level, each taking its id:
  stalwart send ID MESSAGE      send a message and print the answer of the turn that reads it
  stalwart chat ID              talk line by line (`stalwart chat AGENT_FILE` starts a new session)
  stalwart close ID             close it once the messages it has are answered
  stalwart show ID              print every turn so far; `stalwart cancel ID` stops it at once

`stalwart COMMAND --help` says more of each; docs/sessions.md of all.
"""


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        getattr(args, "help_parser", parser).print_help()
        return EXIT_USAGE
    if (garbled := not_utf8(vars(args))) is not None:
        print(
            f"error: {garbled!r} is not UTF-8 text; Temporal and the model take text only: retype it", file=sys.stderr
        )
        return EXIT_USAGE
    # Model and tool output reaches the terminal: its control characters are shown escaped, never obeyed.
    out, err_out = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = render.terminal_safe(out), render.terminal_safe(err_out)
    try:
        outcome = _command(args.handler)(args)
        if isinstance(outcome, int):  # a command of local files alone answered without an event loop
            return outcome
        import asyncio

        return asyncio.run(_until_terminated(outcome))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`stalwart runs | head`): nothing to say
        return EXIT_OK
    except StalwartError as err:
        return _explain(err)
    finally:
        sys.stdout, sys.stderr = out, err_out


def _command(handler: str) -> Callable[[argparse.Namespace], int | Coroutine[Any, Any, int]]:
    """The command a parser names as "module:function" under stalwart.client.commands: only its module is loaded.

    A coroutine function talks to a server or a process, in an event loop: the Temporal server's refusals it does
    not handle itself come out of it as Stalwart errors. A plain function (`check`) reads local files and starts no
    event loop (asyncio is about a tenth of its start) unless it returns a coroutine to run in one."""
    import importlib
    import inspect

    module, _, function = handler.partition(":")
    command = getattr(importlib.import_module(f"stalwart.client.commands.{module}"), function)
    return explaining(command) if inspect.iscoroutinefunction(command) else command


def _explain(err: StalwartError) -> int:
    """Say `err` in one line on stderr; its exit status is its branch's (docs/errors.md).

    Chosen by class alone: every error a person can act on is a `StalwartError`, raised as such where it happens
    (a Temporal server's refusal by `server_errors`, a file by its reader); anything else is a bug, a traceback."""
    print(f"error: {err}", file=sys.stderr)
    return next(code for branch, code in EXIT_STATUSES if isinstance(err, branch))


class _Version(argparse.Action):
    """`--version`, reading the installed versions only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib import metadata

        # Stalwart's version and the Temporal SDK's, the two a bug report needs.
        print(f"stalwart {metadata.version('stalwart')} (temporalio {metadata.version('temporalio')})")
        parser.exit()


def _collect_from_now_on() -> None:
    """Garbage collection, paused by `console_main` while the command imported what it needs, resumes.

    Those imports (the Temporal client, the contracts) are tens of thousands of objects that live as long as
    the process. Collecting among them finds nothing and took a tenth of `stalwart show` (30 ms of 0.37 s).
    Frozen, they are never scanned again; the objects the command makes from here on are collected as usual."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


async def _until_terminated(command: Coroutine[Any, Any, int]) -> int:
    """Run a command; SIGTERM unwinds it like Ctrl-C, so an embedded dev server is stopped, not orphaned."""
    import asyncio
    import signal

    task = asyncio.current_task()
    assert task is not None
    terminated = []

    def terminate() -> None:
        terminated.append(True)
        task.cancel()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, terminate)
    loop.call_soon(_collect_from_now_on)  # runs once the command's first step (its imports) is over and it waits
    try:
        return await command
    except asyncio.CancelledError:
        if not terminated:
            raise  # Ctrl-C: asyncio.run raises KeyboardInterrupt, exit status 130
        return 143
    except Exception:
        # The Temporal SDK reports a wait it was interrupted in (an update's result, say) as an error of its own
        # (`WorkflowUpdateRPCTimeoutOrCancelledError`): still the interruption, not a failure to print.
        if not task.cancelling():
            raise
        if not terminated:
            raise asyncio.CancelledError from None
        return 143


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line's parser; when `argv` starts with a command's name, with that command's alone.

    Parsing needs the parser of the command it runs, and argparse takes about 10 ms to build all twenty (a sixth of
    `stalwart --help`'s start). Any other `argv` (`--help`, a name that is no command) gets them all, to list them.
    """
    parser = argparse.ArgumentParser(
        prog="stalwart",
        description="Durable AI agents on Temporal: every step recorded, every budget enforced, every run replayable.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print Stalwart's and the Temporal SDK's versions")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    named = argv[0] if argv else None
    for name, add in _COMMANDS.items():
        if name == named or named not in _COMMANDS:
            add(commands)
    return parser


def _command_parser(group: Any, name: str, handler: str, help: str, **more: Any) -> argparse.ArgumentParser:
    sub = group.add_parser(name, help=help, description=help, **more)
    sub.set_defaults(handler=handler)
    return sub


def _add_run(commands: Any) -> None:
    run = _command_parser(
        commands,
        "run",
        "runs:run",
        "Start a run of an agent and follow it to its answer.",
        epilog=_TEXT_FROM.format(what="goal", WHAT="GOAL", example="stalwart run AGENT_FILE - < task.md"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("agent", type=Path, help="agent file (TOML), e.g. agents/calculator.toml")
    _text_options(run, "goal", "what the agent should do")
    _input_option(run)
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


def _add_session(commands: Any) -> None:
    session = commands.add_parser(
        "session",
        help="Start a session: an agent that stays open and answers each message sent to it.",
        description="Sessions: an agent that stays open and answers each message sent to it as one turn.",
        epilog=SESSION_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    session.set_defaults(handler=None, help_parser=session)
    session_commands = session.add_subparsers(title="session commands", metavar="COMMAND")
    start = _command_parser(
        session_commands,
        "start",
        "sessions:start",
        "Start a session of an agent; print its id (the Temporal UI link goes to stderr).",
        epilog="then: stalwart send ID MESSAGE · stalwart chat ID · stalwart show ID · stalwart close ID",
    )
    start.add_argument("agent", type=Path, help="agent file (TOML), e.g. agents/calculator.toml")
    start.add_argument("--id", default=None, help="the session's id (default: AGENT-session-RANDOM)")
    _input_option(start)
    _connection_options(start)


def _add_send(commands: Any) -> None:
    send = _command_parser(
        commands,
        "send",
        "sessions:send",
        "Send a message to a session and print the answer of the turn that reads it.",
        epilog=(
            "A message the session refuses (empty, too long, the session closed or ended) is an error, exit status 1.\n"
            "`stalwart show ID` prints every step of the session, tool calls included.\n\n"
            + _TEXT_FROM.format(what="message", WHAT="MESSAGE", example="git diff | stalwart send ID -")
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    send.add_argument("session_id", metavar="ID", help="the session's id, as `stalwart session start` printed it")
    _text_options(send, "message", "what to say")
    send.add_argument(
        "--agent",
        type=Path,
        metavar="AGENT_FILE",
        help="start the session with this agent if no session ID is open (same id: same session)",
    )
    _input_option(
        send, "with --agent: an input of the session, if this starts it (repeatable; refused without --agent)"
    )
    send.add_argument(
        "--no-wait",
        action="store_true",
        help="deliver the message (the signal `message`) and return at once; the answer is in `stalwart show ID`",
    )
    send.add_argument("--json", action="store_true", help="print the turn's result (answer, steps, usage) as JSON")
    _connection_options(send)


def _add_chat(commands: Any) -> None:
    chat = _command_parser(
        commands,
        "chat",
        "sessions:chat",
        "Talk to a session line by line: each line of input is a message, each answer is printed as it is written.",
        epilog=(
            "Input ends the chat at end of file or with /exit; the session stays open for later messages.\n"
            "/close closes the session and ends the chat. Input can be piped: `printf 'hi\\n' | stalwart chat ID`.\n"
            "A session that has ended is an error, exit status 1; --id and --input, for a new session, are refused\n"
            "with a session's id."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("target", metavar="AGENT_FILE|ID", help="an agent file, to start a new session; or a session id")
    chat.add_argument("--id", default=None, help="with an agent file: the new session's id (if open: go on with it)")
    _input_option(chat, "with an agent file: an input of the new session (repeatable)")
    _connection_options(chat)


def _add_close(commands: Any) -> None:
    close = _command_parser(
        commands,
        "close",
        "sessions:close",
        "Close a session once the messages it has are answered; print its final stop reason.",
        epilog=_ENDED_ALREADY.format(kind="session", what="closed")
        + " The id of a run that is not a session is an error, exit status 1: `stalwart cancel ID` stops one.",
    )
    close.add_argument("session_id", metavar="ID")
    _connection_options(close)


def _add_worker(commands: Any) -> None:
    worker = _command_parser(
        commands, "worker", "serving:worker", "Run a worker: executes agent runs, model calls and tools."
    )
    _worker_options(worker)
    worker.add_argument(
        "--grace-seconds",
        type=_grace_seconds,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, how long running activities may finish before they are cancelled (and retried "
        "elsewhere); the process exits at most 15 s after that. Default: 10",
    )
    worker.add_argument(
        "--metrics-port",
        default=os.environ.get("STALWART_METRICS_PORT") or None,
        metavar="PORT",
        help="serve Prometheus metrics at http://0.0.0.0:PORT/metrics (or HOST:PORT); default: $STALWART_METRICS_PORT, "
        "else none. Traces go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set",
    )
    _connection_options(worker)
    _versioning_options(worker)


def _add_dev(commands: Any) -> None:
    dev = _command_parser(
        commands, "dev", "serving:dev", "Start the Temporal dev server (SQLite, Web UI) and a worker, until Ctrl-C."
    )
    _dev_options(dev)
    _worker_options(dev)
    dev.add_argument(
        "--metrics-port",
        default=os.environ.get("STALWART_METRICS_PORT") or None,
        metavar="PORT",
        help="the worker serves Prometheus metrics at http://0.0.0.0:PORT/metrics (or HOST:PORT)",
    )


def _add_codec_server(commands: Any) -> None:
    codec = _command_parser(
        commands,
        "codec-server",
        "serving:codec_server",
        "Serve the Temporal Web UI's remote codec: decrypts payloads for allowed web origins (and the temporal CLI).",
        epilog=(
            "Needs the workers' STALWART_ENCRYPTION_KEYS (or STALWART_ENCRYPTION_KEY_FILE) and, to show payloads kept\n"
            "in external storage, their STALWART_STORAGE. Set STALWART_CODEC_TOKEN to require\n"
            "`Authorization: Bearer <token>` on every request. `stalwart dev` starts one itself when keys are set."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    codec.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    codec.add_argument("--port", type=int, default=8234, help="port to listen on (default: 8234)")
    codec.add_argument(
        "--origin",
        action="append",
        default=[],
        help="web origin allowed to call, e.g. https://temporal.example.com (repeatable; default: "
        "$STALWART_CODEC_ORIGINS, comma-separated, or http://localhost:8233 and http://127.0.0.1:8233)",
    )


def _add_serve(commands: Any) -> None:
    serve = _command_parser(
        commands,
        "serve",
        "serve:serve",
        "Serve the HTTP API for apps (/api) and a page to talk to sessions and approve tool calls (/).",
        epilog="Set STALWART_SERVE_TOKEN to require `Authorization: Bearer <token>`; without it, only the loopback. "
        "docs/serve.md lists the routes.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8235, help="port to listen on (default: 8235)")
    serve.add_argument(
        "--origin",
        action="append",
        default=[],
        help="another web origin whose pages may call the API, e.g. https://app.example.com (repeatable; default: "
        "$STALWART_SERVE_ORIGINS, comma-separated, else none besides the server's own page)",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=1024 * 1024, help="largest request body accepted (default: 1 MiB)"
    )
    serve.add_argument(
        "--agents-dir",
        default=".",
        metavar="DIR",
        help="the folder agent files named by path are read from, relative paths included (default: the current "
        "folder); an agent anywhere else is sent as its spec",
    )
    _connection_options(serve)


def _add_show(commands: Any) -> None:
    show = _command_parser(
        commands, "show", "inspecting:show", "Print the step log of a run or session, running or finished."
    )
    show.add_argument("run_id", metavar="ID")
    show.add_argument(
        "--events", action="store_true", help="print the run as events (user_message, tool_call, ...) instead"
    )
    show.add_argument("--json", action="store_true", help="print as JSON")
    _connection_options(show)


def _add_runs(commands: Any) -> None:
    runs = _command_parser(
        commands, "runs", "inspecting:list_runs", "List runs and sessions with their search attributes."
    )
    runs.add_argument(
        "--query",
        help="Temporal visibility query, e.g. 'AgentStatus=\"done\" AND AgentTokens > 100' "
        "or 'AgentStatus=\"waiting\"' (open sessions, which take messages)",
    )
    runs.add_argument("--limit", type=_positive, default=20, help="at most this many runs, newest first (20)")
    runs.add_argument(
        "--task-queue",
        dest="on_task_queue",
        default=None,
        type=_queue_name,
        metavar="TASK_QUEUE",
        help="only the runs started on this task queue (default: the runs of every task queue)",
    )
    _connection_options(runs, task_queue=False)


def _add_cancel(commands: Any) -> None:
    cancel = _command_parser(
        commands,
        "cancel",
        "runs:cancel",
        "Cancel a run or session; it ends `cancelled` and keeps its steps.",
        epilog=_ENDED_ALREADY.format(kind="run or session", what="cancelled"),
    )
    cancel.add_argument("run_id", metavar="ID")
    _connection_options(cancel)


def _add_pending(commands: Any) -> None:
    pending = _command_parser(
        commands, "pending", "approvals:pending", "List tool calls waiting for approval (of one run, or of all runs)."
    )
    pending.add_argument("run_id", metavar="ID", nargs="?")
    _connection_options(pending)


def _add_decision(commands: Any, name: str, approved: bool, summary: str) -> None:
    decide = _command_parser(
        commands,
        name,
        "approvals:decide",
        summary,
        epilog="A run that has ended takes no decision: an error saying how it ended, exit status 1 (docs/errors.md).",
    )
    decide.add_argument("run_id", metavar="ID")
    decide.add_argument("call_id", help="the call's id, as `stalwart pending` lists it")
    decide.add_argument(
        "--reason",
        required=not approved,
        default=None,
        help="why (required to reject: the model reads it as the call's result)"
        if not approved
        else "why (recorded in the run)",
    )
    decide.add_argument("--reviewer", default=None, help="who decided (recorded in the run)")
    decide.set_defaults(approved=approved)
    _connection_options(decide)


def _add_check(commands: Any) -> None:
    check = _command_parser(
        commands,
        "check",
        "inspecting:check",
        "Validate an agent file and print the spec it describes.",
        epilog=(
            "Prints the spec as JSON on stdout, then on stderr the tools the model would see: registered tools,\n"
            "built-ins, sub-agents and, for MCP servers, the tools each server lists (so it starts them, which\n"
            "takes as long as they take to answer). A broken file is one line on stderr saying what to fix."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("agent", type=Path, help="agent file (TOML), e.g. agents/calculator.toml")


def _add_history(commands: Any) -> None:
    history = commands.add_parser(
        "history",
        help="Record runs as history files, to replay them in tests and before deploys.",
        description="Record runs as history files, to replay them in tests and before deploys.",
    )
    history.set_defaults(handler=None, help_parser=history)
    history_commands = history.add_subparsers(title="history commands", metavar="COMMAND")
    export = _command_parser(
        history_commands,
        "export",
        "history:export",
        "Write a run's history (every run of its continue-as-new chain, with the stored payloads it names).",
        epilog="then: stalwart replay FOLDER (in CI, and before every deploy)",
    )
    export.add_argument("run_id", nargs="?", metavar="RUN_ID", help="the run or session to export")
    export.add_argument("-o", "--output", type=Path, default=Path("histories"), help="folder (default: histories/)")
    export.add_argument(
        "--query",
        default=None,
        help="export the chain of every run a visibility query matches (the newest 1000) instead",
    )
    _connection_options(export)


def _add_replay(commands: Any) -> None:
    replay = _command_parser(
        commands,
        "replay",
        "history:replay",
        "Replay recorded or live histories against the code installed here; exit 1 if any would diverge.",
        epilog=(
            "examples:\n  stalwart history export RUN_ID -o tests/histories\n"
            "  stalwart replay tests/histories/   # the files export wrote: Stalwart runs, exit 1 if one diverges\n"
            "  stalwart replay --query 'ExecutionStatus=\"Running\"'   # the pre-deploy gate"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("paths", nargs="*", type=Path, metavar="FILE_OR_DIR", help="history files or folders")
    replay.add_argument("--query", default=None, help="replay the live runs a visibility query matches")
    replay.add_argument("--since", default=None, help="with --query: only runs started within, e.g. 7d, 12h")
    replay.add_argument(
        "--limit",
        type=_positive,
        default=None,
        help="with --query: at most this many runs, newest first (1000); says so when more match",
    )
    _connection_options(replay)


_COMMANDS: dict[str, Callable[[Any], None]] = {
    "run": _add_run,
    "session": _add_session,
    "send": _add_send,
    "chat": _add_chat,
    "close": _add_close,
    "worker": _add_worker,
    "dev": _add_dev,
    "codec-server": _add_codec_server,
    "serve": _add_serve,
    "show": _add_show,
    "runs": _add_runs,
    "cancel": _add_cancel,
    "pending": _add_pending,
    "approve": functools.partial(
        _add_decision, name="approve", approved=True, summary="Approve a waiting tool call so it runs."
    ),
    "reject": functools.partial(
        _add_decision,
        name="reject",
        approved=False,
        summary="Reject a waiting tool call; the model reads the reason as its result.",
    ),
    "check": _add_check,
    "history": _add_history,
    "replay": _add_replay,
}
"""Each command's name -> what adds its parser to the command line's, in the order `stalwart --help` lists them."""


_ENDED_ALREADY = (
    "A {kind} that has already ended is left as it is: nothing is {what}, stderr says how it ended, exit status 0 "
    "(docs/errors.md)."
)
"""The epilog of `cancel` and `close`, which find done what they ask of a run that has ended."""


_TEXT_FROM = """\
{WHAT} `-` reads the {what} from standard input, and --file PATH from a file: whole, as UTF-8 text, with one
final newline dropped (the one `echo`, a heredoc or an editor ends it with). For text too long for an
argument (over 128 KiB) or made by another command, e.g. `{example}`."""


def _text_options(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """The message or goal: an argument, `-` for standard input, or --file PATH (`_text_of` reads it)."""
    parser.add_argument(name, metavar=name.upper(), nargs="?", help=f"{help}; `-` reads it from standard input")
    parser.add_argument(
        "--file",
        type=Path,
        metavar="PATH",
        help=f"read the {name} from the file PATH (UTF-8) instead of {name.upper()}",
    )


def _input_option(parser: argparse.ArgumentParser, help: str = "a run input for tool bindings (repeatable)") -> None:
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE", help=help)


def _connection_options(parser: argparse.ArgumentParser, *, task_queue: bool = True) -> None:
    """How a command reaches Temporal; `task_queue` False for a command whose --task-queue means something else."""
    parser.add_argument(
        "--address",
        default=None,
        help=f"Temporal frontend (default: $TEMPORAL_ADDRESS, else the temporal CLI profile's, else {DEFAULT_ADDRESS})",
    )
    parser.add_argument(
        "--namespace",
        default=None,
        help=f"Temporal namespace (default: $TEMPORAL_NAMESPACE, else the profile's, else {DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="profile of the temporal CLI's config file to connect with: address, namespace, API key, TLS files "
        "(default: $TEMPORAL_PROFILE or 'default')",
    )
    parser.add_argument(
        "--config-file",
        default=None,
        metavar="PATH",
        help="the temporal CLI's config file (default: $TEMPORAL_CONFIG_FILE or ~/.config/temporalio/temporal.toml)",
    )
    if task_queue:
        parser.add_argument(
            "--task-queue", default=TASK_QUEUE, help=f"task queue of the workers (default: {TASK_QUEUE})"
        )
    else:
        parser.set_defaults(task_queue=TASK_QUEUE)


def _grace_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 3600")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def _queue_name(text: str) -> str:
    """A task queue's name: an empty one names no queue (`runs` would list nothing and say no runs were found)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} names no task queue: give the queue's name, or leave --task-queue out for every queue's runs"
        )
    return text


def _worker_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE and register its @tool functions (repeatable)",
    )


def _versioning_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "worker versioning",
        "Name this worker's deployment version to run old and new code side by side (Temporal worker deployments). "
        "New runs go to the deployment's current version: `temporal worker deployment set-current-version "
        "--deployment-name NAME --build-id ID`, or --set-current.",
    )
    group.add_argument(
        "--deployment-name",
        default=os.environ.get("STALWART_DEPLOYMENT_NAME") or None,
        metavar="NAME",
        help="worker deployment this worker belongs to (default: $STALWART_DEPLOYMENT_NAME; unset: unversioned)",
    )
    group.add_argument(
        "--build-id",
        default=os.environ.get("STALWART_BUILD_ID") or None,
        metavar="ID",
        help="this code's build id within the deployment, e.g. a git commit (default: $STALWART_BUILD_ID)",
    )
    group.add_argument(
        "--versioning-behavior",
        choices=["pinned", "auto-upgrade"],
        default=os.environ.get("STALWART_VERSIONING_BEHAVIOR") or None,  # None: pinned, on a versioned worker
        help="pinned: a run ends on the version it started on; auto-upgrade: it moves to the current version at "
        "its next step (new code must replay it). Sessions move at their next rest either way (default: pinned)",
    )
    group.add_argument(
        "--set-current",
        action="store_true",
        help="once this worker polls, make its version the deployment's current one (new runs start on it)",
    )


DEV_DEFAULTS: dict[str, Any] = {"port": 7233, "ui_port": 8233, "codec_port": 8234, "data_dir": Path(".stalwart")}
"""The dev server's options' defaults: `stalwart run` without --dev refuses any of them set otherwise."""


def _dev_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port", type=int, default=DEV_DEFAULTS["port"], help="dev server frontend port (default: 7233)"
    )
    parser.add_argument(
        "--ui-port", type=int, default=DEV_DEFAULTS["ui_port"], help="dev server Web UI port (default: 8233)"
    )
    parser.add_argument(
        "--codec-port",
        type=int,
        default=DEV_DEFAULTS["codec_port"],
        help="with STALWART_ENCRYPTION_KEYS set: port of the codec server the Web UI decrypts through (default: 8234)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEV_DEFAULTS["data_dir"],
        help="where the dev server keeps its database and its log",
    )


# -- runs --------------------------------------------------------------------


# -- sessions ----------------------------------------------------------------


# -- inspecting and deciding -------------------------------------------------


# -- plumbing ----------------------------------------------------------------


def console_main() -> None:
    """The `stalwart` executable: `main`, then an exit that skips interpreter teardown, under which Temporal's
    core threads abort a short-lived process now and then (workers/process_exit.py)."""
    from stalwart.workers.process_exit import exit_now

    gc.disable()  # until the command has imported what it needs: `_collect_from_now_on`
    exit_now(main())


if __name__ == "__main__":
    console_main()
