"""`stalwart session start`, `send`, `chat`, `close` and `show` of a session, and the message (or `run`'s goal) read
from standard input or a file: real subprocesses, real dev server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus

from stalwart.client.api import SessionHandle, StalwartClient
from stalwart.workers.worker import build_worker

from support.approvals import until_pending
from support.repo_paths import AGENTS_DIR, REPO

STALWART = [sys.executable, "-m", "stalwart.client.cli"]
CHATTER = """\
name = "chatter"
model = "scripted"

[[scripted]]
text = "first answer"

[[scripted]]
text = "second answer"
"""


def stalwart(*args: str, address: str, task_queue: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, against the test's server and task queue."""
    env = {**os.environ, "TEMPORAL_UI_URL": "http://localhost:8233"}
    return subprocess.run(
        [*STALWART, *args, "--address", address, "--task-queue", task_queue],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


async def cli(*args: str, dev_env, task_queue: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(stalwart, *args, address=dev_env.address, task_queue=task_queue, stdin=stdin)


@pytest.fixture
def chatter_file(tmp_path: Path) -> Path:
    """A session agent whose scripted model answers "first answer", then "second answer"."""
    path = tmp_path / "chatter.toml"
    path.write_text(CHATTER)
    return path


@pytest.fixture
def client(stalwart_client: StalwartClient) -> StalwartClient:
    return stalwart_client


@pytest.fixture
def sessions(opened: list[str]) -> list[str]:
    """Ids of the sessions a test opened; those still open are terminated after it (tests/conftest.py `opened`)."""
    return opened


def session_id() -> str:
    return f"cli-session-{uuid.uuid4().hex[:8]}"


async def _new_session(agent: Path, client: StalwartClient, sessions: list[str]) -> SessionHandle:
    """A new session of `agent`, terminated after the test (by `sessions`) if it is still open."""
    session = await client.start_session(agent, session_id=session_id())
    sessions.append(session.run_id)
    return session


@pytest.mark.slow
async def test_session_start_prints_the_new_sessions_id_and_its_ui_link_on_stderr(
    dev_env, task_queue, chatter_file, sessions
):
    started = await cli("session", "start", str(chatter_file), dev_env=dev_env, task_queue=task_queue)
    new_id = started.stdout.strip()
    sessions.append(new_id)
    assert started.returncode == 0, started.stderr
    assert re.fullmatch(r"chatter-session-[0-9a-f]{12}\n", started.stdout)
    assert f"Temporal UI: http://localhost:8233/namespaces/default/workflows/{new_id}" in started.stderr
    description = await dev_env.client.get_workflow_handle(new_id).describe()
    assert description.status == WorkflowExecutionStatus.RUNNING


@pytest.mark.slow
async def test_send_prints_the_answer_of_the_turn_that_reads_the_message(
    dev_env, task_queue, client, chatter_file, sessions
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await client.start_session(chatter_file, session_id=session_id())
        sessions.append(session.run_id)
        sent = await cli("send", session.run_id, "hello", dev_env=dev_env, task_queue=task_queue)
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "first answer\n"


@pytest.mark.slow
async def test_send_with_agent_creates_the_session_then_talks_to_the_same_one(
    dev_env, task_queue, client, chatter_file, sessions
):
    new_id = session_id()
    sessions.append(new_id)
    agent = ("--agent", str(chatter_file))
    async with build_worker(dev_env.client, task_queue=task_queue):
        first = await cli("send", new_id, "start it", *agent, dev_env=dev_env, task_queue=task_queue)
        second = await cli("send", new_id, "talk to it", *agent, dev_env=dev_env, task_queue=task_queue)
        state = await client.session(new_id).state()
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert (first.stdout, second.stdout) == ("first answer\n", "second answer\n")  # a new session would say "first"
    assert state.turns == 2


@pytest.mark.slow
async def test_send_no_wait_returns_before_any_worker_runs_and_the_message_is_answered_later(
    dev_env, task_queue, client, chatter_file, sessions
):
    session = await client.start_session(chatter_file, session_id=session_id())
    sessions.append(session.run_id)
    posted = await cli("send", session.run_id, "hello", "--no-wait", dev_env=dev_env, task_queue=task_queue)
    assert posted.returncode == 0, posted.stderr  # returned with no worker polling: it did not wait for an answer
    assert posted.stdout == ""
    async with build_worker(dev_env.client, task_queue=task_queue):
        while (state := await session.state()).turns < 1 or state.status != "waiting":
            await asyncio.sleep(0.05)
    assert [(s.role, s.content) for s in state.steps] == [("user", "hello"), ("assistant", "first answer")]


def _as_from_a_terminal() -> None:
    """Ctrl-C reaches the command as it does from a terminal: a shell that ran the tests in the background (`&`)
    left SIGINT ignored, which its children inherit, and Python then installs no KeyboardInterrupt for it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _waiting_cli(
    *args: str, address: str, task_queue: str, until: str = "no worker is polling", stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    """The CLI started as in `stalwart`, left running; returned once it says `until` (that no worker is polling)."""
    command = subprocess.Popen(
        [*STALWART, *args, "--address", address, "--task-queue", task_queue],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=stdin,
        text=True,
        cwd=REPO,
        preexec_fn=_as_from_a_terminal,  # only resets a signal before exec: safe beside threads
    )
    assert command.stderr is not None
    for line in command.stderr:
        if until in line:
            return command
    raise AssertionError(f"`stalwart {args[0]}` ended ({command.wait()}) without saying {until!r}")


@pytest.mark.slow
@pytest.mark.parametrize(("signal_name", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
async def test_send_interrupted_while_it_waits_for_the_answer_exits_without_a_traceback(
    dev_env, task_queue, client, chatter_file, sessions, signal_name, status
):
    import signal

    session = await client.start_session(chatter_file, session_id=session_id())
    sessions.append(session.run_id)
    sending = await asyncio.to_thread(
        _waiting_cli, "send", session.run_id, "hello", address=dev_env.address, task_queue=task_queue
    )
    sending.send_signal(getattr(signal, signal_name))
    _, err = await asyncio.to_thread(sending.communicate)
    assert sending.returncode == status, err
    assert "Traceback" not in err


@pytest.mark.slow
async def test_close_with_no_worker_polling_says_so_instead_of_waiting_in_silence(
    dev_env, task_queue, client, chatter_file, sessions
):
    session = await client.start_session(chatter_file, session_id=session_id())
    sessions.append(session.run_id)
    closing = await asyncio.to_thread(
        _waiting_cli, "close", session.run_id, address=dev_env.address, task_queue=task_queue
    )
    closing.terminate()
    _, err = await asyncio.to_thread(closing.communicate)
    assert closing.returncode == 143, err
    assert "Traceback" not in err


@pytest.mark.slow
async def test_send_no_wait_refuses_a_message_over_the_sessions_own_limit_instead_of_dropping_it(
    dev_env, task_queue, client, tmp_path, sessions
):
    """A signal has no answer: over the limit the session would drop it, and the sender would never know."""
    tiny = tmp_path / "tiny.toml"
    tiny.write_text(CHATTER + "\n[session]\nmax_message_chars = 10\n")
    session = await client.start_session(tiny, session_id=session_id())
    sessions.append(session.run_id)
    posted = await cli("send", session.run_id, "longer than ten", "--no-wait", dev_env=dev_env, task_queue=task_queue)
    assert posted.returncode == 1, posted.stderr
    assert "max_message_chars=10" in posted.stderr and "Traceback" not in posted.stderr


@pytest.mark.slow
async def test_a_refused_empty_message_exits_1_with_the_sessions_reason_and_no_traceback(
    dev_env, task_queue, client, chatter_file, sessions
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await client.start_session(chatter_file, session_id=session_id())
        sessions.append(session.run_id)
        refused = await cli("send", session.run_id, "  ", dev_env=dev_env, task_queue=task_queue)
    assert refused.returncode == 1
    assert refused.stderr == "error: the message is empty: send some text\n"
    assert refused.stdout == ""


@pytest.mark.slow
async def test_send_to_an_unknown_id_says_how_to_list_and_start_sessions(dev_env, task_queue):
    unknown = await cli("send", "no-such-session", "hello", dev_env=dev_env, task_queue=task_queue)
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: no session 'no-such-session': ")
    assert "stalwart runs --query 'AgentStatus=\"waiting\"'" in unknown.stderr
    assert "stalwart session start AGENT_FILE --id no-such-session" in unknown.stderr
    assert "Traceback" not in unknown.stderr


@pytest.mark.slow
async def test_close_prints_the_final_stop_reason_closed(dev_env, task_queue, client, chatter_file, sessions):
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await client.start_session(chatter_file, session_id=session_id())
        sessions.append(session.run_id)
        await session.send("hello")
        closed = await cli("close", session.run_id, dev_env=dev_env, task_queue=task_queue)
        result = await session.result()
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout == "closed\n"
    assert result.stop_reason == "closed"


@pytest.mark.slow
async def test_chat_with_piped_input_answers_each_line_in_order_and_exits_0(
    dev_env, task_queue, chatter_file, sessions
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        chat = await cli("chat", str(chatter_file), dev_env=dev_env, task_queue=task_queue, stdin="hello\nagain\n")
    started = re.search(r"^session (chatter-session-[0-9a-f]{12}) ", chat.stderr, flags=re.M)
    if started:
        sessions.append(started[1])
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == "first answer\nsecond answer\n"
    assert started, chat.stderr  # the new session's id is said (on stderr, so stdout holds only answers)
    assert "you> " not in chat.stdout + chat.stderr  # no prompt when input is not a terminal


@pytest.mark.slow
async def test_chat_refuses_a_piped_line_that_is_not_utf8_and_answers_the_lines_around_it(
    dev_env, task_queue, chatter_file, sessions
):
    command = [*STALWART, "chat", str(chatter_file), "--address", dev_env.address, "--task-queue", task_queue]
    async with build_worker(dev_env.client, task_queue=task_queue):
        chat = await asyncio.to_thread(
            subprocess.run, command, input=b"hello\nbad \xff byte\nagain\n", capture_output=True, cwd=REPO
        )
    err = chat.stderr.decode(errors="replace")
    if started := re.search(r"^session (chatter-session-[0-9a-f]{12}) ", err, flags=re.M):
        sessions.append(started[1])
    assert chat.returncode == 1 and "Traceback" not in err, err
    assert "is not UTF-8 text; it was not sent" in err
    assert chat.stdout == b"first answer\nsecond answer\n"


# -- a plain run's id given to a session command ----------------------------

CAREFUL = """\
name = "careful"
model = "scripted"
tools = ["calculator"]
require_approval = ["calculator"]

[[scripted]]
tool_calls = [{ name = "calculator", arguments = { expression = "2+3" }, id = "add" }]

[[scripted]]
text = "5"
"""


async def plain_run(client: StalwartClient, tmp_path: Path, *, finished: bool) -> str:
    """The id of a run that is not a session: finished, or still running (waiting for an approval). Needs a worker."""
    if finished:
        agent = tmp_path / "chatter.toml"
        agent.write_text(CHATTER)
        handle = await client.start(agent, "hello")
        await handle.result()
    else:
        agent = tmp_path / "careful.toml"
        agent.write_text(CAREFUL)
        handle = await client.start(agent, "add")
        await until_pending(handle)
    return handle.run_id


@pytest.mark.slow
@pytest.mark.parametrize(
    ("finished", "options"), [(True, ()), (True, ("--no-wait",)), (False, ())], ids=["finished", "no-wait", "running"]
)
async def test_send_to_a_run_says_it_is_a_run_not_a_session_and_how_to_start_one(
    dev_env, task_queue, client, tmp_path, sessions, finished, options
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        run_id = await plain_run(client, tmp_path, finished=finished)
        sessions.append(run_id)
        sent = await cli("send", run_id, "hello", *options, dev_env=dev_env, task_queue=task_queue)
    assert sent.returncode == 1, sent.stderr
    [said] = [line for line in sent.stderr.splitlines() if line.startswith("error: ")]
    assert said.startswith(f"error: {run_id} is a run, not a session: only a session takes messages. "), said
    assert "`stalwart session start AGENT_FILE`" in said and "--agent AGENT_FILE" in said, said
    assert "has ended" not in sent.stderr and "Traceback" not in sent.stderr


@pytest.mark.slow
async def test_close_of_a_finished_run_says_it_is_a_run_not_a_session_and_exits_1_as_send_and_chat_do(
    dev_env, task_queue, client, tmp_path
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        run_id = await plain_run(client, tmp_path, finished=True)
    closed = await cli("close", run_id, dev_env=dev_env, task_queue=task_queue)
    assert closed.returncode == 1, closed.stderr
    assert closed.stdout == ""
    assert closed.stderr == (
        f"error: {run_id} is a run, not a session: it has ended (done), there is nothing to close; "
        f"`stalwart show {run_id}` prints it\n"
    )


@pytest.mark.slow
async def test_chat_with_a_finished_run_says_it_is_a_run_not_a_session(dev_env, task_queue, client, tmp_path):
    async with build_worker(dev_env.client, task_queue=task_queue):
        run_id = await plain_run(client, tmp_path, finished=True)
    chat = await cli("chat", run_id, dev_env=dev_env, task_queue=task_queue)
    assert chat.returncode == 1, chat.stderr
    assert chat.stderr == f"error: {run_id} is a run, not a session: `stalwart chat AGENT_FILE` starts a session\n"


# -- a message or goal read from standard input or a file --------------------

LONG_TEXT = "\n".join(f"line {i}: " + "words " * 40 for i in range(1000))
"""About 250 KB on many lines: more than one argument may hold (128 KiB), and inner newlines to keep."""


def _text_source(source: str, tmp_path: Path, text: str) -> tuple[tuple[str, ...], str | None]:
    """The arguments and the standard input that give the CLI `text`: `-` and stdin, or --file PATH."""
    if source == "stdin":
        return ("-",), text
    path = tmp_path / "text.md"
    path.write_text(text)
    return ("--file", str(path)), None


@pytest.mark.slow
@pytest.mark.parametrize("source", ["stdin", "file"])
async def test_send_sends_the_whole_message_from_stdin_or_a_file_less_its_final_newline(
    dev_env, task_queue, client, chatter_file, sessions, tmp_path, source
):
    given, stdin = _text_source(source, tmp_path, LONG_TEXT + "\n")
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await _new_session(chatter_file, client, sessions)
        sent = await cli("send", session.run_id, *given, dev_env=dev_env, task_queue=task_queue, stdin=stdin)
        state = await session.state()
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "first answer\n"
    assert state.steps[0].content == LONG_TEXT


@pytest.mark.slow
@pytest.mark.parametrize("source", ["stdin", "file"])
async def test_run_runs_towards_the_whole_goal_from_stdin_or_a_file_less_its_final_newline(
    dev_env, task_queue, chatter_file, tmp_path, source
):
    given, stdin = _text_source(source, tmp_path, LONG_TEXT + "\n")
    async with build_worker(dev_env.client, task_queue=task_queue):
        ran = await cli("run", str(chatter_file), *given, "--json", dev_env=dev_env, task_queue=task_queue, stdin=stdin)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["answer"] == "first answer"
    assert result["steps"][0]["role"] == "user" and result["steps"][0]["content"] == LONG_TEXT


UNREACHABLE = "127.0.0.1:1"
"""No server: a command that reaches for one fails there, so an error said before it was said before connecting."""


@pytest.mark.parametrize("command", ["send", "run"])
@pytest.mark.parametrize("source", ["stdin", "file"])
def test_a_message_or_goal_that_is_not_utf8_is_one_error_line_naming_the_fix(chatter_file, tmp_path, command, source):
    text = b"caf\xe9 au lait\n"  # Latin-1
    path = tmp_path / "latin1.txt"
    path.write_bytes(text)
    given = ["-"] if source == "stdin" else ["--file", str(path)]
    target = "some-session" if command == "send" else str(chatter_file)
    refused = subprocess.run(
        [*STALWART, command, target, *given, "--address", UNREACHABLE],
        input=text if source == "stdin" else b"",
        capture_output=True,
        cwd=REPO,
    )
    err = refused.stderr.decode(errors="replace")
    named = "standard input" if source == "stdin" else str(path)
    assert refused.returncode == 2, err
    assert err == (
        f"error: {named} is not UTF-8 text (byte 0xe9 at offset 3); Temporal and the model take text only: "
        "convert it to UTF-8 first, e.g. `iconv -f ITS_ENCODING -t UTF-8`\n"
    )


async def _target_of(command: str, agent: Path, client: StalwartClient, sessions: list[str]) -> str:
    """What `send` or `run` is given before its message or goal: a new session of `agent`, or the agent file."""
    return str(agent) if command == "run" else (await _new_session(agent, client, sessions)).run_id


@pytest.mark.slow
@pytest.mark.parametrize("command", ["send", "run"])
async def test_an_empty_message_or_goal_from_stdin_gets_the_empty_refusal(
    dev_env, task_queue, client, chatter_file, sessions, command
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        target = await _target_of(command, chatter_file, client, sessions)
        refused = await cli(command, target, "-", dev_env=dev_env, task_queue=task_queue, stdin="\n")
    assert refused.stdout == ""
    if command == "send":
        assert (refused.returncode, refused.stderr) == (1, "error: the message is empty: send some text\n")
    else:
        assert refused.returncode == 2 and refused.stderr.startswith("error: a run needs a goal"), refused.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", ["send", "run"])
async def test_a_message_or_goal_from_stdin_over_the_agents_limit_gets_the_limit_refusal(
    dev_env, task_queue, client, tmp_path, sessions, command
):
    tiny = tmp_path / "tiny.toml"
    tiny.write_text(CHATTER + "\n[session]\nmax_message_chars = 10\n")
    async with build_worker(dev_env.client, task_queue=task_queue):
        target = await _target_of(command, tiny, client, sessions)
        refused = await cli(command, target, "-", dev_env=dev_env, task_queue=task_queue, stdin="longer than ten\n")
    assert refused.returncode == (1 if command == "send" else 2), refused.stderr
    assert refused.stderr.startswith(f"error: the {'message' if command == 'send' else 'goal'} has 15 characters, ")
    assert "max_message_chars" in refused.stderr and "Traceback" not in refused.stderr


READING = "reading the message from standard input; end it with Ctrl-D"


@contextlib.asynccontextmanager
async def _sending_from_a_terminal(
    session: str, dev_env, task_queue: str
) -> AsyncIterator[tuple[int, subprocess.Popen[str]]]:
    """`stalwart send SESSION -` reading a pseudo-terminal, once it says so: the terminal's keyboard (to type on)
    and the command."""
    keyboard, terminal = os.openpty()
    try:
        yield (
            keyboard,
            await asyncio.to_thread(
                _waiting_cli,
                "send",
                session,
                "-",
                address=dev_env.address,
                task_queue=task_queue,
                until=READING,
                stdin=terminal,
            ),
        )
    finally:
        os.close(keyboard)
        os.close(terminal)


@pytest.mark.slow
async def test_send_dash_on_a_terminal_says_to_end_the_message_with_ctrl_d_and_sends_what_was_typed(
    dev_env, task_queue, client, chatter_file, sessions
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await _new_session(chatter_file, client, sessions)
        async with _sending_from_a_terminal(session.run_id, dev_env, task_queue) as (keyboard, sending):
            os.write(keyboard, b"typed on\na terminal\n\x04")  # Ctrl-D at the start of a line ends the input
            out, err = await asyncio.to_thread(sending.communicate)
        state = await session.state()
    assert sending.returncode == 0, err
    assert out == "first answer\n"
    assert state.steps[0].content == "typed on\na terminal"


@pytest.mark.slow
@pytest.mark.parametrize(("signal_name", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
async def test_send_dash_interrupted_while_it_reads_a_terminal_exits_without_a_traceback(
    dev_env, task_queue, client, chatter_file, sessions, signal_name, status
):
    import signal

    async with build_worker(dev_env.client, task_queue=task_queue):  # the old code sent "-" and ended
        session = await _new_session(chatter_file, client, sessions)
        async with _sending_from_a_terminal(session.run_id, dev_env, task_queue) as (_, sending):
            sending.send_signal(getattr(signal, signal_name))
            out, err = await asyncio.to_thread(sending.communicate)
        state = await session.state()
    assert sending.returncode == status, err
    assert "Traceback" not in err and out == ""
    assert state.turns == 0, "nothing was sent"


@pytest.mark.slow
async def test_show_of_a_session_lists_every_turn_and_says_it_waits_for_a_message(
    dev_env, task_queue, client, chatter_file, sessions
):
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await client.start_session(chatter_file, session_id=session_id())
        sessions.append(session.run_id)
        await session.send("hello")
        await session.send("again")
        shown = await cli("show", session.run_id, dev_env=dev_env, task_queue=task_queue)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"session {session.run_id} · agent chatter · status waiting · 2 turns"
    assert re.fullmatch(r"  \[0\] message hello", lines[1])
    assert re.fullmatch(r"  \[1\] model   first answer \(.+\)", lines[2])
    assert re.fullmatch(r"  \[1\] message again", lines[3])
    assert re.fullmatch(r"  \[2\] model   second answer \(.+\)", lines[4])
    assert f"waiting for a message: `stalwart send {session.run_id} MESSAGE`" in shown.stdout


@pytest.mark.slow
async def test_show_imports_neither_the_worker_nor_a_provider_sdk_nor_the_dev_server_nor_the_sdks_client(
    dev_env, task_queue, client, chatter_file, sessions
):
    """`show` only reads, through the service client (`client/reader.py`): the SDK's `Client` would be a third of
    its start. So it reads a live session (a query to its worker), the same session with no worker running (from
    its history) and a finished run (its recorded result). Only the offline one rebuilds the run from its input,
    so only it loads the agent spec's contracts, the largest of them (`contracts/run_input.py`)."""

    def show(run_id: str, *, offline: bool = False) -> list[str]:
        heavy = (*HEAVY, "temporalio.client", *(() if offline else ("stalwart.contracts.agent",)))
        return _imports_of("show", run_id, "--json", "--address", dev_env.address, heavy=heavy)

    async with build_worker(dev_env.client, task_queue=task_queue):  # a running session answers through a worker
        session = await client.start_session(chatter_file, session_id=session_id())
        sessions.append(session.run_id)
        await session.send("hello")
        live = await asyncio.to_thread(show, session.run_id)
        finished = await client.start(AGENTS_DIR / "calculator.toml", "What is (17 * 23) + 4?")
        await finished.result()
    offline = await asyncio.to_thread(functools.partial(show, session.run_id, offline=True))
    assert (live, offline, await asyncio.to_thread(show, finished.run_id)) == ([], [], [])


def test_help_and_check_import_neither_the_worker_nor_a_provider_sdk_nor_the_dev_server():
    assert _imports_of("--help") == []
    assert _imports_of("check", str(AGENTS_DIR / "calculator.toml")) == []


def test_check_reads_an_agent_file_without_loading_the_temporal_sdk():
    """Checking a file is validation alone; the SDK's import would be most of the command's time (80 ms)."""
    assert _imports_of("check", str(AGENTS_DIR / "calculator.toml"), heavy=("temporalio",)) == []


def test_check_of_an_agent_without_mcp_servers_starts_no_event_loop():
    """asyncio's import is a tenth of the command's start; only listing an MCP server's tools needs the loop."""
    assert _imports_of("check", str(AGENTS_DIR / "calculator.toml"), heavy=("asyncio",)) == []


def test_the_cli_names_the_task_queue_workflow_type_and_defaults_of_the_contracts():
    """The CLI writes these out so that `--help` need not import the contracts; they must not drift apart."""
    from stalwart.client import cli
    from stalwart.contracts import names

    assert (cli.TASK_QUEUE, cli.WORKFLOW_TYPE, cli.DEFAULT_ADDRESS, cli.DEFAULT_NAMESPACE) == (
        names.TASK_QUEUE,
        names.WORKFLOW_TYPE,
        names.DEFAULT_ADDRESS,
        names.DEFAULT_NAMESPACE,
    )


HEAVY = ("openai", "anthropic", "mcp", "temporalio.worker", "stalwart.workers")


def _imports_of(*argv: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules a CLI command imports, run to success in a fresh interpreter."""
    probe = (
        "import json, os, sys\n"
        "from stalwart.client import cli\n"
        "try:\n"
        f"    code = cli.main({list(argv)!r})\n"
        "except SystemExit as done:\n"
        "    code = done.code\n"
        f"heavy = {heavy!r}\n"
        "found = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "print(json.dumps([code, found]), file=sys.stderr, flush=True)\n"
        "os._exit(0)\n"  # skip interpreter teardown, as the `stalwart` executable does (cli.console_main)
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    code, found = json.loads(ran.stderr.strip().splitlines()[-1])
    assert code in (0, None), ran.stderr
    return found
