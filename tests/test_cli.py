"""The `stalwart` command, run as a real subprocess against a real dev server."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import WorkflowFailureError

from stalwart.client.api import StalwartClient
from stalwart.client.cli import EXIT_USAGE, main
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.workers.dev_server import free_port
from stalwart.workers.worker import build_worker

from support.approvals import until_pending
from support.repo_paths import AGENTS_DIR, REPO

STALWART = [sys.executable, "-m", "stalwart.client.cli"]


def stalwart(*args: str, address: str | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--address", address] if address else []
    env = {**os.environ, "TEMPORAL_UI_URL": "http://localhost:8233"}
    return subprocess.run(
        [*STALWART, *args, *extra], capture_output=True, text=True, cwd=REPO, env=env, stdin=subprocess.DEVNULL
    )


def _careful_agent(folder: Path) -> Path:
    """An agent file whose calculator call `add` (2+3) waits for approval, then answers 5."""
    agent_file = folder / "careful.toml"
    agent_file.write_text(
        'name = "careful"\ntools = ["calculator"]\nrequire_approval = ["calculator"]\n'
        '[[scripted]]\ntool_calls = [{ name = "calculator", arguments = { expression = "2+3" }, id = "add" }]\n'
        '[[scripted]]\ntext = "5"\n'
    )
    return agent_file


def test_garbage_collection_paused_for_a_commands_imports_resumes_once_the_command_first_waits():
    from stalwart.client import cli

    seen = []

    async def command() -> int:
        seen.append(gc.isenabled())  # the first step, where a command imports what it needs
        await asyncio.sleep(0)
        seen.append(gc.isenabled())
        return 0

    gc.disable()  # as `console_main` does
    try:
        assert asyncio.run(cli._until_terminated(command())) == 0
        frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
        gc.enable()
    assert seen == [False, True]
    assert frozen > 0, "what the first step imported is frozen, out of every later collection's way"


def test_version_names_stalwart_and_the_temporal_sdk():
    shown = stalwart("--version")
    assert shown.returncode == 0
    assert re.fullmatch(r"stalwart \S+ \(temporalio \S+\)\n", shown.stdout)


def test_check_names_the_misspelled_field_and_suggests_the_right_one(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[budgets]\nmax_step = 3\n')
    result = stalwart("check", str(bad))
    assert result.returncode == 2
    assert f"{bad}: field `budgets.max_step` is not an agent setting; did you mean `max_steps`?" in result.stderr


def test_run_with_a_bad_agent_file_names_the_field_before_starting_anything(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[budgets]\nmax_steps = 0\n')
    result = stalwart("run", str(bad), "goal")
    assert result.returncode == 2
    assert "field `budgets.max_steps`" in result.stderr and "at least 1" in result.stderr
    assert "Temporal" not in result.stderr


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--keep"], "--keep"), (["--port", "7300", "--data-dir", "x"], "--port, --data-dir")],
    ids=["keep", "port-and-data-dir"],
)
def test_run_without_dev_refuses_the_dev_servers_options_it_would_ignore(capsys, options, named):
    code = main(["run", *options, str(AGENTS_DIR / "calculator.toml"), "goal"])
    assert code == EXIT_USAGE
    assert f"error: {named} set the embedded dev server of --dev: add --dev" in capsys.readouterr().err


@pytest.mark.slow
def test_run_dev_runs_the_example_agent_to_its_answer_and_prints_the_ui_link(tmp_path):
    port, ui_port = free_port(), free_port()
    result = stalwart(
        "run",
        "--dev",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--data-dir",
        str(tmp_path),
        "agents/calculator.toml",
        "What is (17 * 23) + 4?",
    )
    assert result.returncode == 0, result.stderr
    assert 'calculator(expression="(17 * 23) + 4") → 395' in result.stdout
    assert "answer: (17 * 23) + 4 = 395" in result.stdout
    assert "stop reason: done" in result.stdout
    assert f"Temporal UI: http://localhost:{ui_port}/namespaces/default/workflows/calculator-" in result.stdout
    assert (tmp_path / "temporal.db").exists()


def test_run_json_prints_only_the_result_as_json_on_stdout(tmp_path):
    port, ui_port = free_port(), free_port()
    result = stalwart(
        "run",
        "--dev",
        "--json",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--data-dir",
        str(tmp_path),
        "agents/calculator.toml",
        "What is (17 * 23) + 4?",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stop_reason"] == "done"
    assert "Temporal UI:" in result.stderr


@pytest.mark.slow
async def test_show_and_pending_of_a_terminated_run_give_every_step_it_took_and_why_it_ended(
    dev_env, task_queue, tmp_path
):
    agent_file = _careful_agent(tmp_path)
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(agent_file, "add")
        await until_pending(handle)
        await dev_env.client.get_workflow_handle(handle.run_id).terminate(reason="stuck on a test")
        show = await asyncio.to_thread(stalwart, "show", handle.run_id, address=dev_env.address)
        pending = await asyncio.to_thread(stalwart, "pending", handle.run_id, address=dev_env.address)
        state = await handle.state()
    assert show.returncode == 0, show.stderr
    assert f"run {handle.run_id} · agent careful · status terminated" in show.stdout
    assert 'calculator(expression="2+3") → ERROR the run terminated: stuck on a test' in show.stdout
    assert "error: the run terminated: stuck on a test" in show.stdout
    assert state.status == "terminated" and [s.role for s in state.steps] == ["user", "assistant", "tool"]
    assert (
        pending.returncode == 0
        and "has ended, so none of its calls waits" in pending.stdout
        and "call add" not in pending.stdout
    )


@pytest.mark.slow
async def test_show_of_a_run_that_failed_says_why_it_failed(dev_env, task_queue):
    async with build_worker(dev_env.client, task_queue=task_queue):
        started = await dev_env.client.start_workflow(
            WORKFLOW_TYPE, args=[{"goal": "no agent"}], id=f"no-agent-{uuid.uuid4().hex[:6]}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError):
            await started.result()
    show = await asyncio.to_thread(stalwart, "show", started.id, address=dev_env.address)
    assert show.returncode == 0, show.stderr
    assert "status failed" in show.stdout and "error: the run failed: invalid run input:" in show.stdout
    assert "agent;   Field required" in show.stdout


@pytest.mark.slow
async def test_show_and_runs_read_a_finished_run_by_its_search_attributes(dev_env, task_queue):
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(AGENTS_DIR / "calculator.toml", "What is (17 * 23) + 4?")
        await handle.result()
    address = dev_env.address
    show = await asyncio.to_thread(stalwart, "show", handle.run_id, address=address)
    events = await asyncio.to_thread(stalwart, "show", handle.run_id, "--events", address=address)
    for _ in range(50):  # visibility is eventually consistent
        runs = await asyncio.to_thread(
            stalwart, "runs", "--query", f'AgentStatus="done" AND WorkflowId="{handle.run_id}"', address=address
        )
        if handle.run_id in runs.stdout:
            break
        await asyncio.sleep(0.1)
    assert "status done" in show.stdout and "→ 395" in show.stdout
    assert [line.split()[1] for line in events.stdout.splitlines()] == [
        "user_message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "agent_response",
    ]
    row = next(line for line in runs.stdout.splitlines() if line.startswith(handle.run_id))
    assert row.split()[1:5] == ["calculator", "done", "2", "40"]


@pytest.mark.slow
async def test_pending_and_approve_decide_a_waiting_call_from_another_process(dev_env, task_queue, tmp_path):
    agent_file = _careful_agent(tmp_path)
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    address = dev_env.address
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(agent_file, "add")
        await until_pending(handle)
        pending = await asyncio.to_thread(stalwart, "pending", handle.run_id, address=address)
        unknown = await asyncio.to_thread(stalwart, "approve", handle.run_id, "nope", address=address)
        approve = await asyncio.to_thread(
            stalwart, "approve", handle.run_id, "add", "--reviewer", "carol", address=address
        )
        result = await handle.result()
    assert 'call add  calculator({"expression": "2+3"})' in pending.stdout
    assert unknown.returncode == 2 and "no tool call 'nope' is waiting" in unknown.stderr
    assert approve.returncode == 0
    assert result.answer == "5" and result.steps[2].result == "5"


@pytest.mark.slow
async def test_approve_and_cancel_of_a_run_that_has_ended_say_it_has_ended(dev_env, task_queue):
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(AGENTS_DIR / "calculator.toml", "What is 2+3?")
        await handle.result()
    approve = await asyncio.to_thread(stalwart, "approve", handle.run_id, "call_1", address=dev_env.address)
    cancel = await asyncio.to_thread(stalwart, "cancel", handle.run_id, address=dev_env.address)
    assert approve.returncode == 1 and "has ended (done), so none of its calls waits for a decision" in approve.stderr
    assert cancel.returncode == 0 and "had already ended (done)" in cancel.stderr and "requested" not in cancel.stdout


@pytest.mark.slow
def test_terminating_stalwart_dev_stops_its_embedded_server(tmp_path):
    import signal
    import socket

    port, ui_port = free_port(), free_port()
    dev = subprocess.Popen(
        [*STALWART, "dev", "--port", str(port), "--ui-port", str(ui_port), "--data-dir", str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    for line in dev.stdout:  # the command says when the server and worker are up
        if "A worker is running" in line:
            break
    dev.send_signal(signal.SIGTERM)
    assert dev.wait() == 143
    with socket.socket() as probe:  # the command waited for its server to exit: nothing listens any more
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += [sub, *_subparsers(sub)]
    return found


def test_every_command_the_parser_names_is_a_command_function_of_its_module():
    """The parser names each command as "module:function" so that only that module is loaded: a name that
    resolves to nothing would fail only when someone runs that command."""
    from stalwart.client import cli

    handlers = {sub.get_default("handler") for sub in _subparsers(cli._parser())} - {None}
    assert len(handlers) >= 15  # run, session start, send, chat, close, worker, dev, show, runs, ...
    for handler in handlers:
        module, _, function = handler.partition(":")
        command = cli._command(handler)  # the function itself, or it wrapped to explain a server's refusals
        assert (command.__module__, command.__name__) == (f"stalwart.client.commands.{module}", function), handler


def test_the_parser_of_one_command_reads_its_command_line_as_the_parser_of_all_does():
    """`main` builds only the parser of the command it runs; every command line must read the same either way."""
    from stalwart.client import cli

    lines = [
        ["run", "a.toml", "goal", "--dev", "--input", "x=1"],
        ["session", "start", "a.toml", "--id", "x"],
        ["send", "s", "hi", "--no-wait"],
        ["worker", "--tools", "m", "--grace-seconds", "3"],
        ["show", "x", "--events", "--json", "--address", "h:1"],
        ["reject", "r", "c", "--reason", "no"],
        ["check", "a.toml"],
        ["history", "export", "r", "-o", "d"],
    ]
    assert {argv[0] for argv in lines} <= set(cli._COMMANDS)
    for argv in lines:
        alone, among_all = (vars(parser.parse_args(argv)) for parser in (cli._parser(argv), cli._parser()))
        alone.pop("help_parser", None), among_all.pop("help_parser", None)  # the session group's own parser object
        assert alone == among_all, argv
