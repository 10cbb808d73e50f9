"""`stalwart session start`, `send`, `chat` and `close`: an agent that stays open and answers each message."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from stalwart.client import render
from stalwart.client.commands import EXIT_OK, EXIT_RUN_FAILED, approvals, connecting, ended
from stalwart.client.commands.inputs import not_utf8, parse_inputs, text_of
from stalwart.contracts.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from stalwart.client.api import SessionHandle, StalwartClient
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.run import AgentResult, RunState


_OPEN_STATUSES = ("running", "awaiting_approval", "waiting")
"""A run's status while it has not ended."""


NO_SESSION_HINT = (
    "`stalwart runs --query 'AgentStatus=\"waiting\"'` lists the open sessions; "
    "`stalwart session start AGENT_FILE --id {id}` starts one, as does `stalwart send {id} MESSAGE --agent AGENT_FILE`"
)


async def start(args: argparse.Namespace) -> int:
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from stalwart.client.agent_files import load_agent

    spec = load_agent(args.agent)
    inputs = parse_inputs(args.input)
    stalwart = await connecting.client(args)
    await connecting.warn_without_workers(stalwart.temporal, args.task_queue)
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


async def send(args: argparse.Namespace) -> int:
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError, RPCStatusCode

    from stalwart.client.agent_files import load_agent
    from stalwart.client.api import SessionClosed

    if args.input and args.agent is None:
        raise UsageError(
            "--input gives an input of the session that --agent starts, and without --agent this command starts "
            f"none: add --agent AGENT_FILE (it starts {args.session_id} if it is not open), or leave --input out "
            "(an open session keeps the inputs it started with)"
        )
    spec = load_agent(args.agent) if args.agent else None
    args.message = await text_of(args, "message")
    inputs = parse_inputs(args.input)
    stalwart = await connecting.client(args)
    if args.no_wait:
        return await _post(stalwart, args, spec, inputs)
    if spec is not None:
        await connecting.warn_without_workers(stalwart.temporal, args.task_queue)
    try:
        async with _while_a_turn_runs(stalwart, args.session_id, ask=approvals.terminal()):
            result = await stalwart.send(args.session_id, args.message, agent=spec, inputs=inputs)
    except WorkflowUpdateFailedError as err:
        print(f"error: {await _not_a_session(stalwart, args.session_id) or _refusal(err)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except SessionClosed:
        return await _not_open(stalwart, args.session_id)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return await _not_open(stalwart, args.session_id)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        if result.answer or result.stop_reason == "done":
            print(result.answer, flush=True)
        if result.stop_reason != "done":
            turn = f"the turn ended with stop reason {result.stop_reason}"
            print(f"error: {turn}: {result.error}" if result.error else f"({turn})", file=sys.stderr)
    return EXIT_RUN_FAILED if result.stop_reason in ("error", "cancelled", "closed", "idle") else EXIT_OK


async def _post(
    stalwart: StalwartClient, args: argparse.Namespace, spec: AgentSpec | None, inputs: dict[str, object]
) -> int:
    """`send --no-wait`: the message as a signal, after starting the session if `--agent` says how."""
    from temporalio.exceptions import WorkflowAlreadyStartedError
    from temporalio.service import RPCError, RPCStatusCode

    from stalwart.contracts.run_input import message_problem

    # A signal has no answer, so a refused one would be dropped unseen: refuse here what can be seen here.
    agent = spec
    if agent is None:  # the session's own limit, from its input
        # No such session, or an input this code cannot read (a run not started by stalwart): said below, when the
        # signal finds no open run, as `send` without --no-wait says it.
        with contextlib.suppress(RPCError, ValueError):
            agent = (await stalwart.session(args.session_id).run_input()).agent
    if (problem := message_problem(args.message, agent)) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if spec is not None:
        await connecting.warn_without_workers(stalwart.temporal, args.task_queue)
        with contextlib.suppress(WorkflowAlreadyStartedError):  # open already: the message goes to it
            await stalwart.start_session(spec, session_id=args.session_id, inputs=inputs)
    session = stalwart.session(args.session_id)
    try:
        await session.post(args.message)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return await _not_open(stalwart, args.session_id)
    if args.json:
        print(json.dumps({"session_id": args.session_id, "delivered": "signal"}))
    print(
        f"sent to {args.session_id}; its answer will be in `stalwart show {args.session_id}`",
        file=sys.stderr,
    )
    return EXIT_OK


async def chat(args: argparse.Namespace) -> int:
    from stalwart.client.api import SessionClosed

    given = [option for option, value in (("--id", args.id), ("--input", args.input)) if value]
    stalwart = await connecting.client(args)
    if given and not _names_an_agent_file(args.target):
        raise UsageError(await _not_an_agent_file(stalwart, args.target, given))
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
    lines = approvals.LineReader()
    failed = False
    while (line := await lines.next("you> " if interactive else None)) is not None:
        message = line.strip()
        if message == "/exit":
            break
        if message == "/close":
            return await _close_session(stalwart, session)
        if not message:
            continue
        if not_utf8(message) is not None:  # a line of bytes that are not UTF-8: say so, and read the next one
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

    from stalwart.client.agent_files import load_agent

    if _names_an_agent_file(args.target):
        spec = load_agent(Path(args.target))
        await connecting.warn_without_workers(stalwart.temporal, args.task_queue)
        try:
            session = await stalwart.start_session(spec, session_id=args.id, inputs=parse_inputs(args.input))
            print(f"session {session.run_id} · agent {spec.name} · model {spec.model}", file=sys.stderr)
        except WorkflowAlreadyStartedError:
            session = stalwart.session(args.id)
            print(f"session {args.id} is already open: going on with it", file=sys.stderr)
        return session
    session = stalwart.session(args.target)
    state = await _state_of(session, args.target)
    if state is None:
        return None
    if not _is_session(state):
        print(f"error: {_a_run(args.target, '`stalwart chat AGENT_FILE` starts a session')}", file=sys.stderr)
        return None
    if state.status not in _OPEN_STATUSES:
        _refuse_a_message(args.target, state.status, start="`stalwart chat AGENT_FILE`")
        return None
    print(f"session {args.target} · agent {state.agent} · {state.turns} turns so far", file=sys.stderr)
    return session


async def _not_an_agent_file(stalwart: StalwartClient, target: str, given: list[str]) -> str:
    """Why `chat TARGET` with options of a new session is refused: TARGET is a run's id, or neither that nor a file
    (asked of the server: an agent file's name given without its path or `.toml` must not read as a session's id)."""
    from temporalio.service import RPCError, RPCStatusCode

    options = f"{' and '.join(given)} set up the new session of an agent file"
    try:
        await stalwart.get(target).describe()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return (
            f"{options}, and {target!r} is neither an agent file (there is no file {Path(target).absolute()}) nor "
            "a session's id: give the agent file's path to start a session of it"
        )
    return (
        f"{options}, and {target!r} is a session's id: leave them out to talk to it (an open session keeps its id "
        "and inputs), or give an AGENT_FILE"
    )


def _names_an_agent_file(target: str) -> bool:
    """Whether `chat`'s target is an agent file, to start a session of, rather than an open session's id."""
    path = Path(target)
    return path.suffix == ".toml" or path.is_file()


async def _chat_turn(
    stalwart: StalwartClient,
    session: SessionHandle,
    message: str,
    view: render.ChatView,
    ask: approvals.LineReader | None,
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


async def close(args: argparse.Namespace) -> int:

    stalwart = await connecting.client(args)
    session = stalwart.session(args.session_id)
    state = await _state_of(session, args.session_id)
    if state is None:
        return EXIT_RUN_FAILED
    over = state.status not in _OPEN_STATUSES
    if not _is_session(state):
        instead = (
            f"it has ended ({state.status}), there is nothing to close; `stalwart show {args.session_id}` prints it"
            if over
            else f"`stalwart cancel {args.session_id}` stops it"
        )
        print(f"error: {_a_run(args.session_id, instead)}", file=sys.stderr)
        return EXIT_RUN_FAILED  # as `send` and `chat` given a run's id
    if over:  # what closing would print, its final stop reason; closing what has ended is done already
        print(state.status)
        return ended.already_ended("session", args.session_id, state.status, nothing="closed")
    return await _close_session(stalwart, session)


async def _close_session(stalwart: StalwartClient, session: SessionHandle) -> int:
    if (await session.state()).status != "waiting":
        print(f"closing {session.run_id} once the messages it has are answered …", file=sys.stderr, flush=True)
    async with _while_a_turn_runs(stalwart, session.run_id, ask=None):  # closing waits for a worker, as a turn does
        result = await session.close()
    print(result.stop_reason, flush=True)
    render.print_closed(session.run_id, result, sys.stderr)
    return EXIT_OK


async def _state_of(session: SessionHandle, session_id: str) -> RunState | None:
    """The session's state; None, said on stderr with how to start one, when there is no such session."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        return await session.state()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        _no_session(session_id)
        return None


def _refusal(err: Exception) -> str:
    """Why the workflow refused an update, in its own words."""
    cause = getattr(err, "cause", None)
    return str(getattr(cause, "message", None) or cause or err)


async def _not_open(stalwart: StalwartClient, session_id: str) -> int:
    """Say why a session cannot be reached (unknown, a plain run, or ended) on stderr; exit status 1."""
    from temporalio.service import RPCError

    try:
        description = await stalwart.get(session_id).describe()
    except RPCError:
        return _no_session(session_id)
    if (not_a_session := await _not_a_session(stalwart, session_id)) is not None:
        print(f"error: {not_a_session}", file=sys.stderr)
        return EXIT_RUN_FAILED
    return _refuse_a_message(
        session_id,
        description.how_ended,
        start="`stalwart session start AGENT_FILE`, or `stalwart send NEW_ID MESSAGE --agent AGENT_FILE`",
    )


def _no_session(session_id: str) -> int:
    """An id no run has: said on stderr with how to list and start sessions; exit status 1."""
    print(f"error: no session {session_id!r}: {NO_SESSION_HINT.format(id=session_id)}", file=sys.stderr)
    return EXIT_RUN_FAILED


def _refuse_a_message(session_id: str, how: str, *, start: str) -> int:
    """A message to a session that has ended: refused, saying how to start a new one (client/commands/ended.py)."""
    return ended.refused(
        "session",
        session_id,
        how,
        because="it takes no more messages and this one was not sent",
        instead=f"start a new session with {start}; `stalwart show {session_id}` prints what this one said",
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
    stalwart: StalwartClient, session_id: str, *, ask: approvals.LineReader | None
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
        await connecting.warn_without_workers(stalwart.temporal, description.task_queue, waiting="the answer")

    async def decisions() -> None:
        while True:  # the session may not exist yet (`send --agent` starts it): try again
            with contextlib.suppress(Exception):
                await approvals.handle_approvals(
                    stalwart.session(session_id), approve_all=False, out=sys.stderr, ask=ask
                )
            await asyncio.sleep(0.3)

    helpers = [asyncio.create_task(warn()), asyncio.create_task(decisions())]
    try:
        yield
    finally:
        for helper in helpers:
            helper.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
