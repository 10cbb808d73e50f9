"""The `stalwart` commands agree with each other: one exit-status rule for a run that has ended, options that do
what they say or are refused, and help that names the commands of a group. Real subprocesses, real dev server."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import pytest
from test_cli_sessions import CHATTER, cli, session_id

from stalwart.client.api import StalwartClient
from stalwart.client.cli import EXIT_USAGE, main
from stalwart.contracts import names
from stalwart.workers.worker import build_worker

# -- a run that has ended: one rule (docs/errors.md, exit statuses) ----------


@pytest.fixture(scope="module")
async def cancelled_session(dev_env, tmp_path_factory) -> AsyncIterator[tuple[str, str]]:
    """The id of a session that was cancelled, and its task queue."""
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    agent = tmp_path_factory.mktemp("ended") / "chatter.toml"
    agent.write_text(CHATTER)
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await StalwartClient(dev_env.client, task_queue=task_queue).start_session(
            agent, session_id=session_id()
        )
        await session.cancel()
        with contextlib.suppress(Exception):
            await session.result()
    yield session.run_id, task_queue


@pytest.mark.slow
@pytest.mark.parametrize(("command", "nothing"), [("cancel", "cancelled"), ("close", "closed")])
async def test_asking_a_run_that_has_ended_to_end_changes_nothing_exits_0_and_says_how_it_ended(
    dev_env, cancelled_session, command, nothing
):
    run_id, task_queue = cancelled_session
    asked = await cli(command, run_id, dev_env=dev_env, task_queue=task_queue)
    assert asked.returncode == 0, asked.stderr
    kind = "run" if command == "cancel" else "session"
    assert asked.stderr == (
        f"{kind} {run_id} had already ended (cancelled): nothing was {nothing}; "
        f"`stalwart show {run_id}` prints how it ended\n"
    )
    assert asked.stdout == ("cancelled\n" if command == "close" else "")  # close prints the final stop reason


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [["approve", "call_1"], ["reject", "call_1", "--reason", "no"], ["send", "hi"], ["send", "hi", "--no-wait"]],
    ids=["approve", "reject", "send", "send-no-wait"],
)
async def test_asking_a_run_that_has_ended_for_anything_else_is_refused_with_exit_1_saying_how_it_ended(
    dev_env, cancelled_session, argv
):
    run_id, task_queue = cancelled_session
    command, *rest = argv
    asked = await cli(command, run_id, *rest, dev_env=dev_env, task_queue=task_queue)
    assert asked.returncode == 1, asked.stderr
    [said] = asked.stderr.splitlines()
    if command == "send":
        assert said.startswith(
            f"error: session {run_id} has ended (cancelled), so it takes no more messages and this one was not "
            "sent; start a new session with `stalwart session start AGENT_FILE`"
        ), said
    else:
        decision = "approved" if command == "approve" else "rejected"
        assert said == (
            f"error: run {run_id} has ended (cancelled), so none of its calls waits for a decision and call call_1 "
            f"was not {decision}; `stalwart show {run_id}` prints what the run did"
        )


@pytest.mark.slow
async def test_chat_with_a_session_that_has_ended_is_refused_with_exit_1_saying_how_it_ended(
    dev_env, cancelled_session
):
    run_id, task_queue = cancelled_session
    chat = await cli("chat", run_id, dev_env=dev_env, task_queue=task_queue, stdin="hi\n")
    assert chat.returncode == 1, chat.stderr
    assert chat.stderr == (
        f"error: session {run_id} has ended (cancelled), so it takes no more messages and this one was not sent; "
        f"start a new session with `stalwart chat AGENT_FILE`; `stalwart show {run_id}` prints what this one said\n"
    )


@pytest.mark.slow
async def test_send_no_wait_to_a_run_that_has_ended_with_an_input_it_cannot_read_says_so_as_send_does(dev_env):
    run_id, task_queue = f"bare-{uuid.uuid4().hex[:8]}", f"tq-{uuid.uuid4().hex[:8]}"
    bare = await dev_env.client.start_workflow(names.WORKFLOW_TYPE, "go", id=run_id, task_queue=task_queue)
    await bare.terminate(reason="a run not started by stalwart")  # its input, a bare string, is no RunInput
    waited = await cli("send", run_id, "hi", dev_env=dev_env, task_queue=task_queue)
    posted = await cli("send", run_id, "hi", "--no-wait", dev_env=dev_env, task_queue=task_queue)
    assert posted.returncode == 1, posted.stderr
    assert posted.stderr == waited.stderr
    assert posted.stderr.startswith(f"error: session {run_id} has ended (terminated), so it takes no more messages")


# -- options that only a new session reads -----------------------------------

UNREACHABLE = ("--address", "127.0.0.1:1")
"""No server: a command refused as a usage error of its command line alone says so before it connects."""


@pytest.mark.parametrize("options", [(), ("--no-wait",)], ids=["wait", "no-wait"])
def test_send_with_an_input_but_no_agent_is_a_usage_error_naming_agent(capsys, options):
    status = main(["send", "calc-chat", "hello", "--input", "unit=celsius", *options, *UNREACHABLE])
    err = capsys.readouterr().err
    assert status == EXIT_USAGE, err
    assert err == (
        "error: --input gives an input of the session that --agent starts, and without --agent this command starts "
        "none: add --agent AGENT_FILE (it starts calc-chat if it is not open), or leave --input out (an open "
        "session keeps the inputs it started with)\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(("option", "value"), [("--input", "unit=celsius"), ("--id", "other")])
async def test_chat_with_a_session_id_and_an_option_of_new_sessions_is_a_usage_error(
    dev_env, cancelled_session, option, value
):
    session, task_queue = cancelled_session
    chat = await cli("chat", session, option, value, dev_env=dev_env, task_queue=task_queue, stdin="")
    assert chat.returncode == EXIT_USAGE, chat.stderr
    assert chat.stderr.startswith(
        f"error: {option} set up the new session of an agent file, and {session!r} is a session's id: leave them out"
    )
    assert "AGENT_FILE" in chat.stderr


@pytest.mark.slow
async def test_chat_with_options_of_new_sessions_and_neither_a_session_nor_a_file_says_neither(dev_env):
    chat = await cli("chat", "nosuch-session", "--id", "x", dev_env=dev_env, task_queue="stalwart", stdin="")
    assert chat.returncode == EXIT_USAGE, chat.stderr
    assert "is neither an agent file (there is no file " in chat.stderr
    assert "/nosuch-session) nor a session's id: give the agent file's path" in chat.stderr


def test_runs_with_an_empty_task_queue_is_a_usage_error_naming_the_fix(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["runs", "--task-queue", "", *UNREACHABLE])
    assert exited.value.code == EXIT_USAGE
    assert "'' names no task queue: give the queue's name, or leave --task-queue out" in capsys.readouterr().err


# -- stalwart runs --task-queue ------------------------------------------------


@pytest.mark.slow
async def test_runs_with_a_task_queue_lists_only_the_runs_of_that_queue(dev_env, opened, tmp_path):
    agent = tmp_path / "chatter.toml"
    agent.write_text(CHATTER)
    queues = [f"tq-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    run_ids = []
    for queue in queues:  # no worker: a run is listed from its start
        handle = await StalwartClient(dev_env.client, task_queue=queue).start(agent, "hello")
        opened.append(handle.run_id)
        run_ids.append(handle.run_id)
    both = f"WorkflowId IN ('{run_ids[0]}', '{run_ids[1]}')"
    while len(await StalwartClient(dev_env.client).list(both)) < 2:  # visibility is eventually consistent
        await asyncio.sleep(0.1)
    for queue, (this, other) in zip(queues, [run_ids, run_ids[::-1]], strict=True):
        runs = await cli("runs", dev_env=dev_env, task_queue=queue)
        assert runs.returncode == 0, runs.stderr
        assert [line.split()[0] for line in runs.stdout.splitlines()[1:]] == [this], runs.stdout
        assert other not in runs.stdout


# -- help ----------------------------------------------------------------------


def test_session_help_names_the_session_commands_that_are_top_level(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["session", "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    for command in ("stalwart send ID MESSAGE", "stalwart chat ID", "stalwart close ID", "stalwart show ID"):
        assert command in out, out
