"""The `stalwart` command: run agents, talk to sessions, serve workers, inspect runs.

Start-up imports only the standard library, so `stalwart --help` answers at once: each command
imports what it needs (the client, the worker, the dev server) when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, TypeVar

from stalwart.client import render

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator, Callable, Coroutine, Sequence

    from temporalio.client import Client

    from stalwart.client.api import RunHandle, SessionHandle, StalwartClient
    from stalwart.client.reader import RunReader
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.run import AgentResult, RunState

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2
_T = TypeVar("_T")

# The same as stalwart.contracts.names, which is not imported here (it loads the contracts and the
# Temporal SDK); tests/test_cli_sessions.py checks that they agree.
TASK_QUEUE = "stalwart"
WORKFLOW_TYPE = "AgentWorkflow"
DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        getattr(args, "help_parser", parser).print_help()
        return EXIT_USAGE
    if (garbled := _not_utf8(vars(args))) is not None:
        print(
            f"error: {garbled!r} is not UTF-8 text; Temporal and the model take text only: retype it", file=sys.stderr
        )
        return EXIT_USAGE
    import asyncio

    # Model and tool output reaches the terminal: its control characters are shown escaped, never obeyed.
    out, err_out = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = render.terminal_safe(out), render.terminal_safe(err_out)
    try:
        return asyncio.run(_until_terminated(args.handler(args)))
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        code = _explain(err)
        if code is None:
            raise
        return code
    finally:
        sys.stdout, sys.stderr = out, err_out


def _not_utf8(values: object) -> str | None:
    """The first argument with bytes that are not UTF-8 (Python holds them as lone surrogates), if any."""
    if isinstance(values, str | os.PathLike):
        text = os.fspath(values)
        return text if isinstance(text, str) and any("\udc80" <= c <= "\udcff" for c in text) else None
    if isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, list | tuple):
        return next((found for value in values if (found := _not_utf8(value)) is not None), None)
    return None


def _explain(err: Exception) -> int | None:
    """An error a person can act on, said in one line on stderr; None for a bug (a traceback)."""
    from temporalio.service import RPCError, RPCStatusCode

    from stalwart.activities.storage.encryption import ENCODING as ENCRYPTED
    from stalwart.activities.storage.encryption import KEY_FILE_VAR, KEYS_VAR, EncryptionKeyError
    from stalwart.client.agent_files import AgentFileError
    from stalwart.client.reader import RunWithoutResult

    if isinstance(err, BrokenPipeError):  # the reader went away (`stalwart runs | head`): nothing to say
        return EXIT_OK
    # Modules whose errors only the commands that load them can raise: looked up, not imported.
    api, replay, transcripts = map(
        sys.modules.get, ("stalwart.client.api", "stalwart.client.replay", "stalwart.activities.transcripts")
    )
    if (
        isinstance(err, UsageError | AgentFileError)
        or (api and isinstance(err, api.InvalidRunInput))
        or (replay and isinstance(err, replay.HistoryFileError))
    ):
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if (
        isinstance(err, RunWithoutResult | ConnectionError | EncryptionKeyError)
        or (api and isinstance(err, api.SessionClosed))
        or (transcripts and isinstance(err, transcripts.TranscriptError))  # steps kept where this process looks not
    ):
        print(f"error: {err}", file=sys.stderr)
        return EXIT_RUN_FAILED
    temporal_client = sys.modules.get("temporalio.client")  # loaded by every command that reaches a server
    if temporal_client and isinstance(err, temporal_client.WorkflowFailureError):
        from stalwart.workflows.failures import innermost_message

        print(f"error: the run failed: {innermost_message(err)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    dev_server = sys.modules.get("stalwart.workers.dev_server")
    if dev_server and isinstance(err, dev_server.DevServerExited):
        print(f"error: {err}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if isinstance(err, OSError) and err.filename is not None:  # a folder or file named on the command line
        print(f"error: {err.filename}: {err.strerror or err}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(err, KeyError) and ENCRYPTED.decode() in str(err):  # the converter met a payload it has no key for
        print(
            f"error: the run's payloads are encrypted and no encryption key is set here: set {KEYS_VAR} (or "
            f"{KEY_FILE_VAR}) to the workers' keys",
            file=sys.stderr,
        )
        return EXIT_RUN_FAILED
    if isinstance(err, RPCError):
        if err.status == RPCStatusCode.NOT_FOUND:
            said = err.message.rstrip(".")
            hint = (
                "check --namespace (or TEMPORAL_NAMESPACE): `temporal operator namespace list` lists them"
                if said.lower().startswith("namespace")
                else "`stalwart runs` lists the runs of this namespace"
            )
            print(f"error: {said}. {hint}.", file=sys.stderr)
        else:
            # A query to a running workflow times out when no worker runs it.
            hint = (
                "; a running run or session answers through a worker: is one polling its task queue?"
                if err.status in (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED)
                else ""
            )
            print(
                f"error: Temporal answered {err.status.name if err.status else 'an error'}: {err.message}{hint}",
                file=sys.stderr,
            )
        return EXIT_RUN_FAILED
    return None


class UsageError(Exception):
    """A command line the command cannot act on (a message that is not text, say): one `error:` line, exit status 2."""


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stalwart",
        description="Durable AI agents on Temporal: every step recorded, every budget enforced, every run replayable.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print Stalwart's and the Temporal SDK's versions")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name: str, handler, help: str, *, group: Any = commands, **more: Any) -> argparse.ArgumentParser:
        sub = group.add_parser(name, help=help, description=help, **more)
        sub.set_defaults(handler=handler)
        return sub

    run = command(
        "run",
        _run,
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

    session = commands.add_parser(
        "session",
        help="Start a session: an agent that stays open and answers each message sent to it.",
        description="Sessions: an agent that stays open and answers each message sent to it as one turn.",
    )
    session.set_defaults(handler=None, help_parser=session)
    session_commands = session.add_subparsers(title="session commands", metavar="COMMAND")
    start = command(
        "start",
        _session_start,
        "Start a session of an agent; print its id (the Temporal UI link goes to stderr).",
        group=session_commands,
        epilog="then: stalwart send ID MESSAGE · stalwart chat ID · stalwart show ID · stalwart close ID",
    )
    start.add_argument("agent", type=Path, help="agent file (TOML), e.g. agents/calculator.toml")
    start.add_argument("--id", default=None, help="the session's id (default: AGENT-session-RANDOM)")
    _input_option(start)
    _connection_options(start)

    send = command(
        "send",
        _send,
        "Send a message to a session and print the answer of the turn that reads it.",
        epilog=(
            "A message the session refuses (empty, too long, the session closed) is an error, exit status 1.\n"
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
    _input_option(send, "with --agent: an input of the session, if this starts it (repeatable)")
    send.add_argument(
        "--no-wait",
        action="store_true",
        help="deliver the message (the signal `message`) and return at once; the answer is in `stalwart show ID`",
    )
    send.add_argument("--json", action="store_true", help="print the turn's result (answer, steps, usage) as JSON")
    _connection_options(send)

    chat = command(
        "chat",
        _chat,
        "Talk to a session line by line: each line of input is a message, each answer is printed as it is written.",
        epilog=(
            "Input ends the chat at end of file or with /exit; the session stays open for later messages.\n"
            "/close closes the session and ends the chat. Input can be piped: `printf 'hi\\n' | stalwart chat ID`."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("target", metavar="AGENT_FILE|ID", help="an agent file, to start a new session; or a session id")
    chat.add_argument("--id", default=None, help="with an agent file: the new session's id (if open: go on with it)")
    _input_option(chat, "with an agent file: an input of the new session (repeatable)")
    _connection_options(chat)

    close = command(
        "close",
        _close,
        "Close a session once the messages it has are answered; print its final stop reason.",
    )
    close.add_argument("session_id", metavar="ID")
    _connection_options(close)

    worker = command("worker", _worker, "Run a worker: executes agent runs, model calls and tools.")
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

    dev = command("dev", _dev, "Start the Temporal dev server (SQLite, Web UI) and a worker, until Ctrl-C.")
    _dev_options(dev)
    _worker_options(dev)
    dev.add_argument(
        "--metrics-port",
        default=os.environ.get("STALWART_METRICS_PORT") or None,
        metavar="PORT",
        help="the worker serves Prometheus metrics at http://0.0.0.0:PORT/metrics (or HOST:PORT)",
    )

    codec = command(
        "codec-server",
        _codec_server,
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

    show = command("show", _show, "Print the step log of a run or session, running or finished.")
    show.add_argument("run_id", metavar="ID")
    show.add_argument("--events", action="store_true", help="print the KAOS-style event list instead")
    show.add_argument("--json", action="store_true", help="print as JSON")
    _connection_options(show)

    runs = command("runs", _runs, "List runs and sessions with their search attributes.")
    runs.add_argument(
        "--query",
        help="Temporal visibility query, e.g. 'AgentStatus=\"done\" AND AgentTokens > 100' "
        "or 'AgentStatus=\"waiting\"' (open sessions, which take messages)",
    )
    runs.add_argument("--limit", type=_positive, default=20, help="at most this many runs, newest first (20)")
    _connection_options(runs)

    cancel = command("cancel", _cancel, "Cancel a run or session; it ends `cancelled` and keeps its steps.")
    cancel.add_argument("run_id", metavar="ID")
    _connection_options(cancel)

    pending = command("pending", _pending, "List tool calls waiting for approval (of one run, or of all runs).")
    pending.add_argument("run_id", metavar="ID", nargs="?")
    _connection_options(pending)

    for name, approved, summary in (
        ("approve", True, "Approve a waiting tool call so it runs."),
        ("reject", False, "Reject a waiting tool call; the model reads the reason as its result."),
    ):
        decide = command(name, _decide, summary)
        decide.add_argument("run_id", metavar="ID")
        decide.add_argument("call_id", help="the call's id, as `stalwart pending` lists it")
        decide.add_argument("--reason", required=not approved, default=None)
        decide.add_argument("--reviewer", default=None, help="who decided (recorded in the run)")
        decide.set_defaults(approved=approved)
        _connection_options(decide)

    check = command(
        "check",
        _check,
        "Validate an agent file and print the spec it describes.",
        epilog=(
            "Prints the spec as JSON on stdout, then on stderr the tools the model would see: registered tools,\n"
            "built-ins, sub-agents and, for MCP servers, the tools each server lists (so it starts them, which\n"
            "takes as long as they take to answer). A broken file is one line on stderr saying what to fix."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("agent", type=Path, help="agent file (TOML), e.g. agents/calculator.toml")

    history = commands.add_parser(
        "history",
        help="Record runs as history files, to replay them in tests and before deploys.",
        description="Record runs as history files, to replay them in tests and before deploys.",
    )
    history.set_defaults(handler=None, help_parser=history)
    history_commands = history.add_subparsers(title="history commands", metavar="COMMAND")
    export = command(
        "export",
        _history_export,
        "Write a run's history (every run of its continue-as-new chain, with the stored payloads it names).",
        group=history_commands,
        epilog="then: stalwart replay FOLDER (in CI, and before every deploy)",
    )
    export.add_argument("run_id", nargs="?", metavar="RUN_ID", help="the run or session to export")
    export.add_argument("-o", "--output", type=Path, default=Path("histories"), help="folder (default: histories/)")
    export.add_argument("--query", default=None, help="export every run a visibility query matches instead")
    _connection_options(export)

    replay = command(
        "replay",
        _replay,
        "Replay recorded or live histories against the code installed here; exit 1 if any would diverge.",
        epilog=(
            "examples:\n  stalwart replay tests/fixtures/histories/\n"
            "  stalwart replay --query 'ExecutionStatus=\"Running\"'   # the pre-deploy gate"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("paths", nargs="*", type=Path, metavar="FILE_OR_DIR", help="history files or folders")
    replay.add_argument("--query", default=None, help="replay the live runs a visibility query matches")
    replay.add_argument("--since", default=None, help="with --query: only runs started within, e.g. 7d, 12h")
    _connection_options(replay)
    return parser


async def _history_export(args: argparse.Namespace) -> int:
    from stalwart.client.replay import export_run

    if (args.run_id is None) == (args.query is None):
        print("error: name a RUN_ID or give --query, not both", file=sys.stderr)
        return EXIT_USAGE
    stalwart = await _client(args)
    # Each chain once: a query naming `ExecutionStatus` lists every run of a chain, and each names the whole chain.
    ids = [args.run_id] if args.run_id else list(dict.fromkeys(r.run_id for r in await stalwart.list(args.query, 1000)))
    for run_id in ids:
        for path in await export_run(stalwart.temporal, run_id, args.output):
            print(path)
    return EXIT_OK


async def _replay(args: argparse.Namespace) -> int:
    from stalwart.client.replay import replay_files, replay_live

    if bool(args.paths) == bool(args.query):
        either = "give history files or folders, or --query"
        print(f"error: {either}, not both" if args.paths else f"error: {either}", file=sys.stderr)
        return EXIT_USAGE
    if args.since and not args.query:
        print("error: --since chooses among the runs of --query; history files are replayed whole", file=sys.stderr)
        return EXIT_USAGE
    if args.query:
        query = f"WorkflowType='{WORKFLOW_TYPE}' AND ({args.query})"
        if args.since:
            query += f" AND StartTime > '{_since(args.since)}'"
        outcomes = await replay_live((await _client(args)).temporal, query)
    else:
        outcomes = await replay_files(args.paths)
    for outcome in outcomes:
        verdict = "ok" if outcome.ok else "CANNOT READ" if outcome.unreadable else "DIVERGES"
        print(f"{verdict}  {outcome.name} {outcome.run_id}")
        if outcome.divergence or outcome.unreadable:
            print(f"    {outcome.divergence or outcome.unreadable}")
    diverged = sum(o.divergence is not None for o in outcomes)
    unreadable = sum(o.unreadable is not None for o in outcomes)
    failed = diverged + unreadable
    print(
        f"{len(outcomes) - failed} replayed, {diverged} diverged"
        + (f", {unreadable} could not be read here" if unreadable else ""),
        file=sys.stderr,
    )
    if not outcomes:
        print("error: nothing to replay", file=sys.stderr)
        return EXIT_RUN_FAILED
    return EXIT_RUN_FAILED if failed else EXIT_OK


def _since(text: str) -> str:
    from datetime import UTC, datetime, timedelta

    units = {"d": "days", "h": "hours", "m": "minutes"}
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit():
        raise SystemExit(f"error: --since takes a number and d, h or m, e.g. 7d; not {text!r}")
    start = datetime.now(UTC) - timedelta(**{units[text[-1]]: int(text[:-1])})
    return start.strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _connection_options(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--task-queue", default=TASK_QUEUE, help=f"task queue of the workers (default: {TASK_QUEUE})")


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
        default=os.environ.get("STALWART_VERSIONING_BEHAVIOR") or "pinned",
        help="pinned: a run ends on the version it started on; auto-upgrade: it moves to the current version at "
        "its next step (new code must replay it). Sessions move at their next rest either way (default: pinned)",
    )
    group.add_argument(
        "--set-current",
        action="store_true",
        help="once this worker polls, make its version the deployment's current one (new runs start on it)",
    )


def _dev_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=7233, help="dev server frontend port (default: 7233)")
    parser.add_argument("--ui-port", type=int, default=8233, help="dev server Web UI port (default: 8233)")
    parser.add_argument(
        "--codec-port",
        type=int,
        default=8234,
        help="with STALWART_ENCRYPTION_KEYS set: port of the codec server the Web UI decrypts through (default: 8234)",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".stalwart"), help="where the dev server keeps its database and its log"
    )


# -- runs --------------------------------------------------------------------


async def _run(args: argparse.Namespace) -> int:
    import asyncio

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
    spec = load_agent(args.agent)
    goal = await _text_of(args, "goal")
    inputs = _parse_inputs(args.input)
    async with _temporal(args, embedded=args.dev) as (temporal, ui_url):
        stalwart = StalwartClient(temporal, task_queue=args.task_queue, ui_url=ui_url)
        if not args.dev:
            await _warn_without_workers(temporal, args.task_queue)
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
        approvals = asyncio.create_task(
            _handle_approvals(handle, approve_all=args.approve_all, out=progress, ask=_terminal())
        )
        return await _follow(
            handle, as_json=args.json, keep=args.dev and args.keep, embedded=args.dev, approvals=approvals
        )


async def _follow(
    handle: RunHandle, *, as_json: bool, keep: bool, embedded: bool, approvals: asyncio.Task[None]
) -> int:
    """Print the run as it goes, then its result; `approvals` (its approval handling) stops once the run has ended."""
    import asyncio

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
    import asyncio

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


async def _handle_approvals(
    handle: RunHandle, *, approve_all: bool, out: TextIO, ask: _LineReader | None = None
) -> None:
    """While a run is followed, answer its approval requests: all, by asking on a terminal, or by saying how.

    `ask` reads the person's answer (given when stdin is a terminal); without it, the command says how to decide.
    """
    import asyncio

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


def _terminal() -> _LineReader | None:
    """A reader of the person's answers when stdin is a terminal, else None (a pipe, /dev/null: never ask)."""
    return _LineReader() if sys.stdin.isatty() else None


class _LineReader:
    """Lines of stdin, read on a daemon thread one at a time when asked.

    Not `asyncio.to_thread(input)`: a read still waiting when the command ends would hold
    `asyncio.run` (which joins its executor's threads) until someone pressed Enter.
    """

    def __init__(self) -> None:
        import queue
        import threading

        self._asks: queue.SimpleQueue[tuple[Any, Any, str | None]] = queue.SimpleQueue()
        # A line that is not UTF-8 arrives with its bad bytes as surrogates, for the caller to refuse it alone;
        # strict decoding would end the input there, and every line after it with it.
        with contextlib.suppress(AttributeError, ValueError):
            sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]
        threading.Thread(target=self._serve, name="stalwart-stdin", daemon=True).start()

    async def next(self, prompt: str | None = None) -> str | None:
        """The next line (after showing `prompt`, with line editing), or None at the end of input."""
        import asyncio

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


# -- sessions ----------------------------------------------------------------

_OPEN_STATUSES = ("running", "awaiting_approval", "waiting")
"""A run's status while it has not ended."""

NO_SESSION_HINT = (
    "`stalwart runs --query 'AgentStatus=\"waiting\"'` lists the open sessions; "
    "`stalwart session start AGENT_FILE --id {id}` starts one, as does `stalwart send {id} MESSAGE --agent AGENT_FILE`"
)


async def _session_start(args: argparse.Namespace) -> int:
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from stalwart.client.agent_files import load_agent

    spec = load_agent(args.agent)
    inputs = _parse_inputs(args.input)
    stalwart = await _client(args)
    await _warn_without_workers(stalwart.temporal, args.task_queue)
    try:
        session = await stalwart.start_session(spec, session_id=args.id, inputs=inputs)
    except WorkflowAlreadyStartedError:
        print(
            f"error: {args.id!r} is already open: talk to it with `stalwart send {args.id} MESSAGE`, "
            "or choose another --id",
            file=sys.stderr,
        )
        return EXIT_RUN_FAILED
    print(session.run_id, flush=True)
    print(
        f"session {session.run_id} · agent {spec.name} · model {spec.model}: "
        f"talk to it with `stalwart send {session.run_id} MESSAGE` or `stalwart chat {session.run_id}`",
        file=sys.stderr,
    )
    print(f"Temporal UI: {session.ui_url}", file=sys.stderr)
    return EXIT_OK


async def _send(args: argparse.Namespace) -> int:
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError, RPCStatusCode

    from stalwart.client.agent_files import load_agent
    from stalwart.client.api import SessionClosed

    spec = load_agent(args.agent) if args.agent else None
    args.message = await _text_of(args, "message")
    inputs = _parse_inputs(args.input)
    stalwart = await _client(args)
    if args.no_wait:
        return await _post(stalwart, args, spec, inputs)
    if spec is not None:
        await _warn_without_workers(stalwart.temporal, args.task_queue)
    try:
        async with _while_a_turn_runs(stalwart, args.session_id, ask=_terminal()):
            result = await stalwart.send(args.session_id, args.message, agent=spec, inputs=inputs)
    except WorkflowUpdateFailedError as err:
        print(f"error: {await _not_a_session(stalwart, args.session_id) or _refusal(err)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except SessionClosed:
        print(f"error: {await _why_not_open(stalwart, args.session_id)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        print(f"error: no session {args.session_id!r}: {NO_SESSION_HINT.format(id=args.session_id)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        if result.answer or result.stop_reason == "done":
            print(result.answer, flush=True)
        if result.stop_reason != "done":
            ended = f"the turn ended with stop reason {result.stop_reason}"
            print(f"error: {ended}: {result.error}" if result.error else f"({ended})", file=sys.stderr)
    return EXIT_RUN_FAILED if result.stop_reason in ("error", "cancelled", "closed", "idle") else EXIT_OK


async def _post(
    stalwart: StalwartClient, args: argparse.Namespace, spec: AgentSpec | None, inputs: dict[str, object]
) -> int:
    """`send --no-wait`: the message as a signal, after starting the session if `--agent` says how."""
    from temporalio.exceptions import WorkflowAlreadyStartedError
    from temporalio.service import RPCError, RPCStatusCode

    from stalwart.contracts.run import message_problem

    # A signal has no answer, so a refused one would be dropped unseen: refuse here what can be seen here.
    agent = spec
    if agent is None:  # the session's own limit, from its input
        with contextlib.suppress(RPCError):  # no such session: said below, when the signal finds none
            agent = (await stalwart.session(args.session_id).run_input()).agent
    if (problem := message_problem(args.message, agent)) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if spec is not None:
        await _warn_without_workers(stalwart.temporal, args.task_queue)
        with contextlib.suppress(WorkflowAlreadyStartedError):  # open already: the message goes to it
            await stalwart.start_session(spec, session_id=args.session_id, inputs=inputs)
    session = stalwart.session(args.session_id)
    try:
        await session.post(args.message)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        print(f"error: {await _why_not_open(stalwart, args.session_id)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if args.json:
        print(json.dumps({"session_id": args.session_id, "delivered": "signal"}))
    print(
        f"sent to {args.session_id}; its answer will be in `stalwart show {args.session_id}`",
        file=sys.stderr,
    )
    return EXIT_OK


async def _chat(args: argparse.Namespace) -> int:
    from stalwart.client.api import SessionClosed

    stalwart = await _client(args)
    session = await _chat_session(stalwart, args)
    if session is None:
        return EXIT_RUN_FAILED
    session_id = session.run_id
    print(f"Temporal UI: {session.ui_url}", file=sys.stderr)
    interactive = sys.stdin.isatty()
    if interactive:
        print("Type a message; /exit or Ctrl-D leaves (the session stays open), /close closes it.", file=sys.stderr)
    live = sys.stdout.isatty()
    agent = (await session.state()).agent if live else ""
    lines = _LineReader()
    failed = False
    while (line := await lines.next("you> " if interactive else None)) is not None:
        message = line.strip()
        if message == "/exit":
            break
        if message == "/close":
            return await _close_session(stalwart, session)
        if not message:
            continue
        if _not_utf8(message) is not None:  # a line of bytes that are not UTF-8: say so, and read the next one
            print(f"error: the line {message!r} is not UTF-8 text; it was not sent", file=sys.stderr)
            failed = True
            continue
        view = render.ChatView(sys.stdout, sys.stderr, prefix=f"{agent}> " if live else "", live=live)
        try:
            result = await _chat_turn(stalwart, session, line.rstrip("\r\n"), view, lines if interactive else None)
        except SessionClosed as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_RUN_FAILED
        if result is None:  # refused: say why and read the next line
            failed = True
            continue
        failed = failed or result.stop_reason != "done"
    print(
        f"(session {session_id} stays open: `stalwart chat {session_id}` goes on with it, "
        f"`stalwart close {session_id}` closes it)",
        file=sys.stderr,
    )
    return EXIT_RUN_FAILED if failed else EXIT_OK


async def _chat_session(stalwart: StalwartClient, args: argparse.Namespace) -> SessionHandle | None:
    """The session `chat` talks to: a new one of an agent file, or the open session with that id."""
    from temporalio.exceptions import WorkflowAlreadyStartedError
    from temporalio.service import RPCError, RPCStatusCode

    from stalwart.client.agent_files import load_agent

    target = Path(args.target)
    if target.suffix == ".toml" or target.is_file():
        spec = load_agent(target)
        await _warn_without_workers(stalwart.temporal, args.task_queue)
        try:
            session = await stalwart.start_session(spec, session_id=args.id, inputs=_parse_inputs(args.input))
            print(f"session {session.run_id} · agent {spec.name} · model {spec.model}", file=sys.stderr)
        except WorkflowAlreadyStartedError:
            session = stalwart.session(args.id)
            print(f"session {args.id} is already open: going on with it", file=sys.stderr)
        return session
    session = stalwart.session(args.target)
    try:
        state = await session.state()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        print(f"error: no session {args.target!r}: {NO_SESSION_HINT.format(id=args.target)}", file=sys.stderr)
        return None
    if not _is_session(state):
        print(f"error: {_a_run(args.target, '`stalwart chat AGENT_FILE` starts a session')}", file=sys.stderr)
        return None
    if state.status not in _OPEN_STATUSES:
        print(
            f"error: session {args.target} has ended ({state.status}): start a new one with `stalwart chat "
            f"AGENT_FILE` (`stalwart show {args.target}` prints what it said)",
            file=sys.stderr,
        )
        return None
    print(f"session {args.target} · agent {state.agent} · {state.turns} turns so far", file=sys.stderr)
    return session


async def _chat_turn(
    stalwart: StalwartClient, session: SessionHandle, message: str, view: render.ChatView, ask: _LineReader | None
) -> AgentResult | None:
    """Send one message; show its tool calls and answer as they come (live) or when the turn ends."""
    import asyncio

    from temporalio.client import WorkflowUpdateFailedError

    from stalwart.client.stream import AnswerDelta

    followers: list[asyncio.Task[None]] = []
    if view.live:
        first = len((await session.state()).steps)  # the steps of earlier turns are not shown again

        async def tool_steps() -> None:
            while True:
                for record in (await session.state()).steps[first:]:
                    view.step(record)
                await asyncio.sleep(0.2)

        async def answer() -> None:
            async for event in session.stream():
                if isinstance(event, AnswerDelta):
                    if view.open_step != event.step:  # the tool calls this text follows come first
                        for record in (await session.state()).steps[first:]:
                            view.step(record)
                    view.delta(event.step, event.text)
                else:
                    view.retract(event.step)

        followers = [asyncio.create_task(tool_steps()), asyncio.create_task(answer())]
    try:
        async with _while_a_turn_runs(stalwart, session.run_id, ask=ask):
            result = await session.send(message)
    except WorkflowUpdateFailedError as err:
        view.close()
        print(f"error: {_refusal(err)}", file=sys.stderr)
        return None
    finally:
        for follower in followers:
            follower.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
    view.finish(result)
    return result


async def _close(args: argparse.Namespace) -> int:
    from temporalio.service import RPCError, RPCStatusCode

    stalwart = await _client(args)
    session = stalwart.session(args.session_id)
    try:
        state = await session.state()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        print(f"error: no session {args.session_id!r}: {NO_SESSION_HINT.format(id=args.session_id)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    ended = state.status not in _OPEN_STATUSES
    if not _is_session(state):
        instead = (
            f"it has ended ({state.status}), there is nothing to close; `stalwart show {args.session_id}` prints it"
            if ended
            else f"`stalwart cancel {args.session_id}` stops it"
        )
        print(f"error: {_a_run(args.session_id, instead)}", file=sys.stderr)
        return EXIT_USAGE
    if ended:  # closed already: say so, as closing would
        print(state.status)
        print(f"session {args.session_id} had already ended", file=sys.stderr)
        return EXIT_OK
    return await _close_session(stalwart, session)


async def _close_session(stalwart: StalwartClient, session: SessionHandle) -> int:
    if (await session.state()).status != "waiting":
        print(f"closing {session.run_id} once the messages it has are answered …", file=sys.stderr, flush=True)
    async with _while_a_turn_runs(stalwart, session.run_id, ask=None):  # closing waits for a worker, as a turn does
        result = await session.close()
    print(result.stop_reason, flush=True)
    render.print_closed(session.run_id, result, sys.stderr)
    return EXIT_OK


def _refusal(err: Exception) -> str:
    """Why the workflow refused an update, in its own words."""
    cause = getattr(err, "cause", None)
    return str(getattr(cause, "message", None) or cause or err)


async def _why_not_open(stalwart: StalwartClient, session_id: str) -> str:
    """What to say when a session cannot be reached: unknown, or ended."""
    from temporalio.service import RPCError

    try:
        description = await stalwart.temporal.get_workflow_handle(session_id).describe()
    except RPCError:
        return f"no session {session_id!r}: {NO_SESSION_HINT.format(id=session_id)}"
    status = description.status.name.lower() if description.status else "unknown"
    return await _not_a_session(stalwart, session_id) or (
        f"session {session_id} has ended ({status}): start a new one with `stalwart session start AGENT_FILE`"
    )


async def _not_a_session(stalwart: StalwartClient, run_id: str) -> str | None:
    """What to say to a message sent to a plain run, which takes none (read from its input); None for a session."""
    from temporalio.service import RPCError

    try:
        if (await stalwart.get(run_id).run_input()).session:
            return None
    except (RPCError, ValueError):  # no such run, or an input this code cannot read: nothing to add
        return None
    return _a_run(
        run_id,
        "only a session takes messages. Start one with `stalwart session start AGENT_FILE`, or start one and "
        "send it the message at once with `stalwart send NEW_ID MESSAGE --agent AGENT_FILE`",
    )


def _is_session(state: RunState) -> bool:
    """Whether a run is a session: a live one says so itself; one that has ended by its record (`render.is_session`)."""
    return state.session if state.status in _OPEN_STATUSES else render.is_session(state)


def _a_run(run_id: str, instead: str) -> str:
    """The error of a session command given the id of a plain run, and what to do instead."""
    return f"{run_id} is a run, not a session: {instead}"


@contextlib.asynccontextmanager
async def _while_a_turn_runs(
    stalwart: StalwartClient, session_id: str, *, ask: _LineReader | None
) -> AsyncIterator[None]:
    """While a turn is awaited: its approval requests are put to the person (or said how to decide), and a
    turn that no worker runs is said so on stderr, rather than a silent wait."""
    import asyncio

    async def warn() -> None:
        await asyncio.sleep(3)
        try:
            description = await stalwart.temporal.get_workflow_handle(session_id).describe()
        except Exception:
            return
        await _warn_without_workers(stalwart.temporal, description.task_queue, waiting="the answer")

    async def approvals() -> None:
        while True:  # the session may not exist yet (`send --agent` starts it): try again
            with contextlib.suppress(Exception):
                await _handle_approvals(stalwart.session(session_id), approve_all=False, out=sys.stderr, ask=ask)
            await asyncio.sleep(0.3)

    helpers = [asyncio.create_task(warn()), asyncio.create_task(approvals())]
    try:
        yield
    finally:
        for helper in helpers:
            helper.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)


# -- inspecting and deciding -------------------------------------------------


async def _pending(args: argparse.Namespace) -> int:
    from temporalio.service import RPCError

    stalwart = await _client(args)
    run_ids = (
        [args.run_id]
        if args.run_id
        else [r.run_id for r in await stalwart.list("AgentAwaitingApproval = true AND ExecutionStatus = 'Running'")]
    )
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
        if handle.offline:
            notes[run_id] = handle.offline
    render.print_pending(runs, sys.stdout, notes=notes)
    return EXIT_OK


async def _decide(args: argparse.Namespace) -> int:
    import asyncio

    from temporalio.client import WorkflowUpdateFailedError

    handle = (await _client(args)).get(args.run_id)
    decide = handle.approve if args.approved else handle.reject
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
    except WorkflowUpdateFailedError as err:
        print(f"error: {err.cause or err}. `stalwart pending {args.run_id}` lists the calls waiting.", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'approved' if args.approved else 'rejected'} call {args.call_id} of run {args.run_id}")
    return EXIT_OK


_DECISION_PATIENCE_SECONDS = 3.0
"""How long `approve`/`reject` waits quietly before saying it waits for a worker."""


async def _worker(args: argparse.Namespace) -> int:
    import asyncio

    from stalwart.client.connection import connect
    from stalwart.workers.search_attributes import ensure_search_attributes
    from stalwart.workers.worker import build_worker, default_registry

    registry = default_registry(args.tools)
    versioning = _deployment_options(args)  # before connecting: a wrong option is said at once
    if args.metrics_port:
        from stalwart.workers.telemetry import metrics_runtime

        try:
            metrics_runtime(args.metrics_port)  # before connecting: the client runs on it
        except (RuntimeError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_USAGE
    temporal = await connect(
        args.address,
        args.namespace,
        profile=args.profile,
        config_file=args.config_file,
        metrics_port=args.metrics_port,
    )
    added = await ensure_search_attributes(temporal)
    if added:
        print(f"registered search attributes: {', '.join(added)}", file=sys.stderr)
    print(
        f"worker polling task queue {args.task_queue!r} on {temporal.service_client.config.target_host} "
        f"with tools: {', '.join(registry.names())}",
        file=sys.stderr,
    )
    if args.metrics_port:
        from stalwart.workers.telemetry import metrics_address

        print(f"metrics: http://{metrics_address(args.metrics_port)}/metrics", file=sys.stderr)
    from datetime import timedelta

    from stalwart.workers.shutdown import Shutdown

    shutdown = Shutdown(args.grace_seconds)
    try:
        async with build_worker(
            temporal,
            registry=registry,
            task_queue=args.task_queue,
            metrics_port=args.metrics_port,
            graceful_shutdown_timeout=timedelta(seconds=args.grace_seconds),
            **versioning,
        ):
            if versioning and args.set_current:
                from stalwart.workers.versioning import set_current_version

                await set_current_version(temporal, args.deployment_name, args.build_id)
                print(
                    f"{args.deployment_name}.{args.build_id} is now the deployment's current version", file=sys.stderr
                )
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                shutdown.begin()  # SIGTERM or Ctrl-C: the worker drains as this block exits
                raise
    finally:
        await shutdown.finish()
    return EXIT_OK


def _deployment_options(args: argparse.Namespace) -> dict[str, Any]:
    """`build_worker`'s `deployment_config` from --deployment-name/--build-id, or nothing for an unversioned worker."""
    if not args.deployment_name and not args.build_id:
        if args.set_current:
            raise SystemExit("--set-current needs --deployment-name and --build-id (this worker is not versioned)")
        return {}
    if not args.deployment_name or not args.build_id:
        given, missing = ("--build-id", "--deployment-name") if args.build_id else ("--deployment-name", "--build-id")
        raise SystemExit(f"{given} needs {missing} too: a worker's version is its deployment name and its build id")
    from stalwart.workers.versioning import deployment_config

    try:
        config = deployment_config(args.deployment_name, args.build_id, args.versioning_behavior)
    except ValueError as err:
        raise SystemExit(str(err)) from err
    print(
        f"worker version {args.deployment_name}.{args.build_id} ({args.versioning_behavior}); new runs start on it "
        f"once it is current: temporal worker deployment set-current-version --deployment-name {args.deployment_name} "
        f"--build-id {args.build_id}",
        file=sys.stderr,
    )
    return {"deployment_config": config}


async def _dev(args: argparse.Namespace) -> int:
    import asyncio

    from stalwart.workers.shutdown import Shutdown

    args.address, args.namespace, args.task_queue = None, None, TASK_QUEUE
    if args.metrics_port:
        from stalwart.workers.telemetry import metrics_runtime

        try:
            metrics_runtime(args.metrics_port)  # said at once, before the dev server starts
        except (RuntimeError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_USAGE
    shutdown = Shutdown(0.0)  # runs cut short resume when the dev server starts again
    try:
        async with _temporal(args, embedded=True) as (_, ui_url):
            print(f"Temporal dev server on 127.0.0.1:{args.port}, data in {args.data_dir}", file=sys.stderr)
            print(f"Temporal UI: {ui_url}", file=sys.stderr)
            if args.metrics_port:
                from stalwart.workers.telemetry import metrics_address

                print(f"metrics: http://{metrics_address(args.metrics_port)}/metrics", file=sys.stderr)
            print(
                "A worker is running; start runs from another shell with `stalwart run AGENT GOAL`. Ctrl-C stops.",
                file=sys.stderr,
            )
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                shutdown.begin()
                raise
    finally:
        await shutdown.finish()
    return EXIT_OK


async def _codec_server(args: argparse.Namespace) -> int:
    from stalwart.client.codec_server import serve

    return await serve(args)


async def _show(args: argparse.Namespace) -> int:
    handle = await _reader(args, args.run_id)
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
    stalwart = await _client(args)
    render.print_runs(await stalwart.list(args.query, limit=args.limit), sys.stdout)
    return EXIT_OK


async def _cancel(args: argparse.Namespace) -> int:
    await (await _client(args)).get(args.run_id).cancel()
    print(f"cancellation requested for {args.run_id}; `stalwart show {args.run_id}` shows where it stopped")
    return EXIT_OK


async def _check(args: argparse.Namespace) -> int:
    from stalwart.client.agent_files import check_agent

    spec = check_agent(args.agent)
    lines: list[str] = []
    if spec.tools or spec.sub_agents or spec.mcp_servers:
        from stalwart.client.agent_files import AgentFileError
        from stalwart.client.tool_names import listed_tools
        from stalwart.contracts.agent import unknown_tool_names

        # The names the model will see, MCP tools listed from their servers and named by the clash rule.
        listed = await listed_tools(spec)
        lines = listed.lines
        unknown = unknown_tool_names(spec, listed.names) if spec.mcp_servers and listed.names is not None else None
        if unknown is not None:  # only now knowable: the MCP servers' tools are listed
            raise AgentFileError(f"{args.agent}: {unknown}")
    print(spec.model_dump_json(indent=2, exclude_defaults=True))
    print(f"ok: {args.agent} describes agent {spec.name!r}", file=sys.stderr)
    if lines:
        print("tools the model sees:", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)
    return EXIT_OK


# -- plumbing ----------------------------------------------------------------


async def _reader(args: argparse.Namespace, run_id: str) -> RunReader:
    """A run to read, through the Temporal service alone: the SDK's client would be a third of the command's start."""
    from stalwart.activities.storage.converter import stalwart_converter
    from stalwart.client.connection import connect_service, ui_base
    from stalwart.client.reader import RunReader

    service, namespace = await connect_service(
        args.address, args.namespace, profile=args.profile, config_file=args.config_file
    )
    address = service.config.target_host
    return RunReader(service.workflow_service, namespace, stalwart_converter(), run_id, ui_base(address))


async def _client(args: argparse.Namespace) -> StalwartClient:
    from stalwart.client.api import StalwartClient

    return await StalwartClient.connect(
        args.address, args.namespace, task_queue=args.task_queue, profile=args.profile, config_file=args.config_file
    )


@contextlib.asynccontextmanager
async def _temporal(args: argparse.Namespace, *, embedded: bool) -> AsyncIterator[tuple[Client, str | None]]:
    """A client; with `embedded`, on a dev server started here, with a worker running beside it."""
    from stalwart.client.connection import connect, record_dev_ui_url

    if not embedded:
        yield await connect(args.address, args.namespace, profile=args.profile, config_file=args.config_file), None
        return
    from stalwart.workers.dev_server import DevServer
    from stalwart.workers.worker import build_worker, default_registry

    registry = default_registry(args.tools)
    server = DevServer(port=args.port, ui_port=args.ui_port, db_file=args.data_dir / "temporal.db")
    codec = _dev_codec_server(args, server)
    print(f"starting the Temporal dev server ({server.db_file}, its log in {server.log_file}) …", file=sys.stderr)
    async with codec, server:
        metrics = getattr(args, "metrics_port", None)  # `stalwart dev --metrics-port`
        # A local server: no cloud profile, no TLS.
        temporal = await connect(server.address, from_config=False, metrics_port=metrics)
        # `stalwart run` in another shell prints links to this server's UI, on whatever --ui-port it has.
        record_dev_ui_url(server.address, server.ui_url)
        try:
            async with build_worker(temporal, registry=registry, task_queue=args.task_queue, metrics_port=metrics):
                yield temporal, server.ui_url
        finally:
            record_dev_ui_url(server.address, None)


def _dev_codec_server(args: argparse.Namespace, server: Any) -> contextlib.AbstractAsyncContextManager[Any]:
    """With encryption keys set, a codec server for the dev server's Web UI, which is pointed at it."""
    from stalwart.activities.storage.encryption import Keyring

    if Keyring.from_env() is None or not server.ui_port:
        return contextlib.nullcontext()
    from stalwart.client.codec_server import running, service_from_env

    origins = [f"http://localhost:{server.ui_port}", f"http://127.0.0.1:{server.ui_port}"]
    server.extra_args += ["--ui-codec-endpoint", f"http://localhost:{args.codec_port}"]
    print(
        f"payloads are encrypted; the Web UI decrypts them through the codec server on port {args.codec_port}",
        file=sys.stderr,
    )
    return running(service_from_env(origins), port=args.codec_port)


async def _warn_without_workers(temporal: Client, task_queue: str, *, waiting: str = "the run") -> None:
    from stalwart.client.reader import workers_polling

    if await workers_polling(temporal.workflow_service, temporal.namespace, task_queue) is False:
        print(
            f"warning: no worker is polling task queue {task_queue!r}; {waiting} will wait until one starts. "
            f"Start one with `stalwart worker`, or use `stalwart run --dev` for an embedded server and worker.",
            file=sys.stderr,
            flush=True,
        )


def _parse_inputs(pairs: list[str]) -> dict[str, object]:
    from stalwart.client.agent_files import AgentFileError

    inputs: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise AgentFileError(f"--input {pair!r}: write it as NAME=VALUE")
        try:
            inputs[name] = json.loads(value)
        except ValueError:  # not JSON, or a number longer than Python reads (4,300 digits): the text itself
            inputs[name] = value
    return inputs


async def _text_of(args: argparse.Namespace, name: str) -> str:
    """The message or goal (`name`) of the command line: the argument, or all of standard input (`-`) or of --file."""
    given, path = getattr(args, name), args.file
    if (given is None) == (path is None):
        either = f"{name.upper()}, `-` to read it from standard input, or --file PATH"
        raise UsageError(f"give the {name} as one of {either}" if given is None else f"give either {either}, not both")
    if path is None and given != "-":
        return str(given)
    return await _off_the_loop(lambda: _read_text(path, name))


def _read_text(path: Path | None, name: str) -> str:
    """All of the file at `path` (None: standard input) as UTF-8 text, less the one newline that ends it."""
    from stalwart.contracts.agent import MAX_MESSAGE_CHARS

    source = "standard input" if path is None else str(path)
    most = 4 * MAX_MESSAGE_CHARS  # bytes: more than any agent takes, as UTF-8 spends at most 4 on a character
    data = bytearray()
    stream: BinaryIO
    with contextlib.ExitStack() as opened:
        if path is not None:
            stream = opened.enter_context(path.open("rb"))
        elif sys.stdin is None:
            raise UsageError(f"there is no standard input to read the {name} from")
        else:
            stream = sys.stdin.buffer
            if sys.stdin.isatty():  # a person is to type it: say how to end it, rather than wait in silence
                print(f"reading the {name} from standard input; end it with Ctrl-D", file=sys.stderr, flush=True)
        while len(data) <= most:
            chunk = stream.read(1 << 20)
            data += chunk
            if len(chunk) < 1 << 20:  # read() stops short only at the end (Ctrl-D on a terminal, which ends it once)
                break
    if len(data) > most:
        raise UsageError(
            f"{source} holds over {most // 1_000_000} MB, more than any agent takes "
            f"([session] max_message_chars is at most {MAX_MESSAGE_CHARS:,} characters)"
        )
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        raise UsageError(
            f"{source} is not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start:,}); Temporal and the "
            "model take text only: convert it to UTF-8 first, e.g. `iconv -f ITS_ENCODING -t UTF-8`"
        ) from None
    return text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")


async def _off_the_loop(read: Callable[[], _T]) -> _T:
    """`read()` on a daemon thread of its own, so that Ctrl-C and SIGTERM end a command that waits on it.

    On the loop's thread, a read waiting on a terminal or a pipe holds off both (asyncio's Ctrl-C only cancels
    the command's task); under `asyncio.to_thread` it holds `asyncio.run`, which joins its executor's threads.
    """
    import asyncio
    import threading
    from concurrent.futures import Future

    outcome: Future[_T] = Future()

    def work() -> None:
        if not outcome.set_running_or_notify_cancel():  # the command ended before the thread started
            return
        try:
            outcome.set_result(read())
        except Exception as err:
            outcome.set_exception(err)

    threading.Thread(target=work, name="stalwart-read", daemon=True).start()
    return await asyncio.wrap_future(outcome)


def console_main() -> None:
    """The `stalwart` executable: `main`, then an exit that skips interpreter teardown.

    Temporal's Rust core keeps threads that can call into Python while CPython finalizes, and a
    short-lived client process then aborts with `Fatal Python error: PyGILState_Release`
    (temporalio/sdk-python#300) after its work is done: 4 of 80 `stalwart approve` runs on a busy
    machine. Everything a command owns (dev server, worker, connections) is closed by the time
    `main` returns, so flushing and `os._exit` lose nothing and keep the exit code honest.
    """
    gc.disable()  # until the command has imported what it needs: `_collect_from_now_on`
    code = main()
    if "logging" in sys.modules:  # a command that logged: hand its last records out
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that went away (`stalwart runs | head`)
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    console_main()
