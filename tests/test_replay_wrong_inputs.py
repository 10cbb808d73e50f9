"""What `stalwart replay`, `stalwart history export` and `stalwart.testing` say when given something they cannot
check: one line naming the fix, and never an `ok` for a history they did not replay."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest
from test_cli import stalwart

from stalwart.activities.storage.encryption import ENCODING, KEY_FILE_VAR, KEYS_VAR
from stalwart.client.cli import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, main
from stalwart.testing import replay_histories

RECORDED = Path(__file__).parent / "fixtures" / "histories" / "calculator_run.json"


def _history_of_type(folder: Path, workflow_type: str, events: int | None = None) -> Path:
    """The recorded calculator run (its first `events`), as if another workflow type had made it."""
    record = json.loads(RECORDED.read_text())
    record["events"] = record["events"][:events]
    record["events"][0]["workflowExecutionStartedEventAttributes"]["workflowType"]["name"] = workflow_type
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "other-run.json"
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("events", [2, None], ids=["just-started", "whole"])
def test_a_history_of_another_workflow_type_is_refused_not_replayed(tmp_path, capsys, events):
    """The replayer reported a just-started such run `ok` (exit 0), and a whole one as diverging from the code here
    (exit 1), each after the SDK's traceback of a workflow class it does not know."""
    path = _history_of_type(tmp_path / "histories", "OrderWorkflow", events)
    assert main(["replay", str(tmp_path / "histories")]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert "ok " not in out
    assert err.startswith(f"error: {path}: ") and "OrderWorkflow" in err and "AgentWorkflow" in err, err
    assert "Traceback" not in err


async def test_replay_histories_fails_on_a_history_of_another_workflow_type(tmp_path):
    """It passed on a just-started one: the test meant to guard a deploy checked nothing."""
    _history_of_type(tmp_path, "OrderWorkflow", events=2)
    with pytest.raises(ValueError, match="OrderWorkflow"):
        await replay_histories(tmp_path)


async def test_replay_histories_says_why_a_history_cannot_be_read_here(tmp_path, monkeypatch):
    """A history it could not read (encrypted, no key here) failed the test with `run.json: None`."""
    monkeypatch.delenv(KEYS_VAR, raising=False)
    monkeypatch.delenv(KEY_FILE_VAR, raising=False)
    record = json.loads(RECORDED.read_text())
    started = record["events"][0]["workflowExecutionStartedEventAttributes"]
    started["input"]["payloads"][0]["metadata"]["encoding"] = base64.b64encode(ENCODING).decode()
    (tmp_path / "run.json").write_text(json.dumps(record))
    with pytest.raises(AssertionError) as failed:
        await replay_histories(tmp_path)
    assert "None" not in str(failed.value) and KEYS_VAR in str(failed.value), failed.value


@pytest.mark.parametrize(
    ("since", "said"),
    [("7x", "error: --since takes a number and d, h or m"), ("99999999d", "error: --since 99999999d reaches back")],
    ids=["not-a-duration", "before-year-1"],
)
def test_a_since_that_is_not_a_duration_is_a_usage_error(capsys, since, said):
    """'7x' left through SystemExit with status 1, the status of a run that failed, not of a command line;
    '99999999d' was an OverflowError traceback."""
    argv = ["replay", "--query", 'ExecutionStatus="Running"', "--since", since, "--address", "127.0.0.1:1"]
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.startswith(said)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--build-id", "7"], "--build-id needs --deployment-name too"),
        (["--deployment-name", "shop"], "--deployment-name needs --build-id too"),
        (["--set-current"], "--set-current needs --deployment-name and --build-id"),
        (["--deployment-name", "a.b", "--build-id", "7"], "contain no '.'"),
        (["--versioning-behavior", "auto-upgrade"], "--versioning-behavior needs --deployment-name and --build-id"),
    ],
    ids=["build-id-alone", "name-alone", "set-current-unversioned", "dotted-name", "behaviour-unversioned"],
)
def test_worker_versioning_options_that_cannot_work_are_usage_errors(capsys, monkeypatch, options, said):
    """Each left with status 1 and no `error:`; a versioning behaviour without a version was ignored: the worker
    ran unversioned, so a person who asked for auto-upgrade got neither behaviour."""
    for name in ("STALWART_DEPLOYMENT_NAME", "STALWART_BUILD_ID", "STALWART_VERSIONING_BEHAVIOR"):
        monkeypatch.delenv(name, raising=False)
    assert main(["worker", "--address", "127.0.0.1:1", *options]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and said in err, err


@pytest.mark.slow
async def test_export_of_a_query_that_matches_no_run_says_so(dev_env, tmp_path):
    """It printed nothing and exited 0: a CI job that records fixtures by a query thought it had recorded them."""
    exported = stalwart(
        "history", "export", "--query", 'AgentName="no-such-agent"', "-o", str(tmp_path), address=dev_env.address
    )
    assert exported.returncode == EXIT_RUN_FAILED, exported.stdout + exported.stderr
    assert exported.stderr.startswith("error: no run matches --query") and "stalwart runs" in exported.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
async def test_the_pre_deploy_gate_over_a_query_that_matches_no_run_passes_saying_so(dev_env):
    """It failed (exit 1) when nothing was in flight, as on a first deploy: there is nothing the new code can break."""
    replayed = stalwart("replay", "--query", 'AgentName="no-such-agent"', address=dev_env.address)
    assert replayed.returncode == EXIT_OK, replayed.stderr
    assert "no run matches the query, so there was nothing to replay" in replayed.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [["replay", "--query"], ["history", "export", "--query"], ["runs", "--query"]],
    ids=["replay", "export", "runs"],
)
async def test_a_query_the_server_refuses_is_a_usage_error_not_a_failed_run(dev_env, argv):
    """It exited 1, which for `replay` is the pre-deploy gate's 'the new code diverges'."""
    for query in ("AgentStatus=", 'NoSuchAttribute="x"'):
        refused = stalwart(*argv, query, address=dev_env.address)
        assert refused.returncode == EXIT_USAGE, refused.stderr
        assert refused.stderr.startswith("error: --query is not a visibility query Temporal accepts: "), refused.stderr
        assert "list-filter" in refused.stderr and "Traceback" not in refused.stderr


def test_a_history_saved_by_the_temporal_cli_under_any_name_replays_a_run_with_a_sub_agent(tmp_path, capsys):
    """`temporal workflow show -o json > history.json`, which replay's own errors suggest, has no workflow id beside
    its events; replay took the file name for it, and a sub-agent's id, made from it, "diverged": exit 1, blaming
    the code. The started event names the workflow id itself."""
    [fixture] = (RECORDED.parent / "capabilities" / "sub_agent").glob("*.json")
    (tmp_path / "history.json").write_text(json.dumps(json.loads(fixture.read_text())["history"]))
    assert main(["replay", str(tmp_path / "history.json")]) == EXIT_OK, capsys.readouterr()
    assert capsys.readouterr().out.startswith("ok  history.json ")


@pytest.mark.slow
async def test_export_of_a_run_that_is_not_there_or_not_an_agent_run_writes_nothing(dev_env, tmp_path):
    """A run id that does not exist left an empty folder behind its error, which `replay` then read as 'nothing to
    replay'; a run of another workflow type was exported, to be refused only by replay."""
    missing = stalwart("history", "export", "no-such-run", "-o", str(tmp_path / "missing"), address=dev_env.address)
    assert missing.returncode == EXIT_RUN_FAILED and "stalwart runs" in missing.stderr, missing.stderr
    assert not (tmp_path / "missing").exists()

    await dev_env.client.start_workflow("OrderWorkflow", id="order-1", task_queue="no-worker-here")
    other = stalwart("history", "export", "order-1", "-o", str(tmp_path / "other"), address=dev_env.address)
    assert other.returncode == EXIT_RUN_FAILED, other.stdout + other.stderr
    assert other.stderr.startswith("error: order-1 is a run of workflow type 'OrderWorkflow', not a Stalwart run")
    assert not (tmp_path / "other").exists()


def test_replay_of_a_folder_without_history_files_says_how_to_make_some(tmp_path, capsys):
    """It said only 'nothing to replay'."""
    (tmp_path / "notes.txt").write_text("not a history")
    assert main(["replay", str(tmp_path)]) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert f"error: no history files (*.json) in {tmp_path}" in err and "stalwart history export" in err, err


def test_export_to_a_file_says_that_it_writes_a_folder(tmp_path, capsys):
    """`-o run.json` over an existing file said only 'run.json: File exists'."""
    (tmp_path / "run.json").write_text("{}")
    assert main(["history", "export", "some-run", "-o", str(tmp_path / "run.json"), "--address", "127.0.0.1:1"]) == (
        EXIT_USAGE
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: -o names a folder, and {tmp_path / 'run.json'} is a file"), err


@pytest.mark.slow
async def test_export_where_the_stored_payloads_are_not_says_where_to_look_and_writes_nothing(
    dev_env, task_queue, tmp_path, monkeypatch
):
    """With STALWART_STORAGE not the workers', export was an ObjectNotFoundError traceback, after writing the history
    file, which replay then could not read."""
    from stalwart.client.api import StalwartClient
    from stalwart.client.connection import connect
    from stalwart.contracts.agent import AgentSpec, ScriptedReply
    from stalwart.workers.worker import build_worker

    monkeypatch.setenv("STALWART_STORAGE", str(tmp_path / "workers-storage"))
    monkeypatch.setenv("STALWART_STORAGE_THRESHOLD_BYTES", "2000")
    storing = await connect(dev_env.address, from_config=False)
    async with build_worker(storing, task_queue=task_queue):
        handle = await StalwartClient(storing, task_queue=task_queue).start(
            AgentSpec(name="long", scripted=[ScriptedReply(text="read it " * 600)]), "a goal"
        )
        await handle.result()
    monkeypatch.setenv("STALWART_STORAGE", str(tmp_path / "elsewhere"))
    exported = stalwart("history", "export", handle.run_id, "-o", str(tmp_path / "out"), address=dev_env.address)
    assert exported.returncode == EXIT_RUN_FAILED, exported.stderr
    assert exported.stderr.startswith(f"error: {handle.run_id}'s history names payloads stored outside it"), (
        exported.stderr
    )
    assert "STALWART_STORAGE" in exported.stderr and "Traceback" not in exported.stderr
    assert not (tmp_path / "out").exists()


def test_replay_of_a_run_id_instead_of_a_file_says_how_to_replay_the_live_run(tmp_path, capsys, monkeypatch):
    """`stalwart replay calc-chat` said only that no such file can be read."""
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "calc-chat"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: calc-chat: cannot be read") and """--query 'WorkflowId="calc-chat"'""" in err, err


def _edited(folder: Path, shape: str) -> Path:
    """The recorded calculator run, edited as no server records a history."""
    record = json.loads(RECORDED.read_text())
    events = record["events"]
    if shape == "swapped":
        events[1], events[2] = events[2], events[1]
    elif shape == "repeated":
        events.insert(7, events[6])
    elif shape == "missing":
        del events[6]
    elif shape == "task-not-ended":  # events 2 and 3 swapped, then numbered again
        events[1], events[2] = events[2], events[1]
        for number, event in enumerate(events, 1):
            event["eventId"] = str(number)
    else:
        del events[0]["workflowExecutionStartedEventAttributes"]["taskQueue"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{shape}.json"
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize(
    ("shape", "said"),
    [
        ("swapped", "numbered 1, 2, 3... in order, and in place of event 2 is event 3 (WorkflowTaskStarted)"),
        ("repeated", "in place of event 8 is event 7"),
        ("missing", "in place of event 7 is event 8"),
        ("task-not-ended", "event 2 starts a workflow task and event 3 (WorkflowTaskScheduled) does not end it"),
        ("no-task-queue", "its first event does not name the run's task queue"),
    ],
)
def test_a_history_edited_as_no_server_records_one_is_refused_saying_how(tmp_path, capsys, shape, said):
    """Events 2 and 3 swapped (numbered again or not) or a started event without its task queue made the SDK core
    panic, and the replay then waited forever, SIGTERM too; an event repeated or left out was blamed on the code
    as a divergence."""
    path = _edited(tmp_path, shape)
    assert main(["replay", str(path)]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {path}: not a workflow history as Temporal records one: "), err
    assert said in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("encoding", "data", "said"),
    [("json/plain", b"not json", "Invalid JSON"), ("binary/null", b"", "binary/null")],
    ids=["not-json", "null"],
)
def test_a_history_that_went_on_from_an_input_that_is_not_a_run_input_is_refused_not_blamed_on_the_code(
    tmp_path, capsys, encoding, data, said
):
    """Its replay was reported as a divergence (TMPRL1100, a code change) at the run's first activity: the code here
    fails a run whose input is not one at once, and the file's run had gone on."""
    record = json.loads(RECORDED.read_text())
    [payload] = record["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"]
    payload["metadata"] = {"encoding": base64.b64encode(encoding.encode()).decode()}
    payload["data"] = base64.b64encode(data).decode()
    path = tmp_path / "run.json"
    path.write_text(json.dumps(record))
    assert main(["replay", str(path)]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(
        f"error: {path}: the recorded run went on from an input that is not a run input"
    )
    assert "invalid run input" in err and said in err and "TMPRL1100" not in err, err


RECIPE = "Replayer(workflows=[YourWorkflow], plugins=[StalwartPlugin()])"


@pytest.mark.slow
async def test_export_of_a_users_own_workflow_says_how_to_record_and_replay_it(dev_env):
    """It said only that the run is not a Stalwart run and that `stalwart runs` lists them: nothing on how to record
    the user's own workflow that calls `execute_agent`, which the kit cannot replay."""
    from stalwart.client.replay import NotAStalwartRun
    from stalwart.testing import export_run

    workflow_id = f"orders-{uuid.uuid4().hex[:8]}"
    await dev_env.client.start_workflow("OrderWorkflow", id=workflow_id, task_queue="no-worker-here")
    with pytest.raises(NotAStalwartRun) as refused:
        await export_run(dev_env.client, workflow_id, "histories")
    said = str(refused.value)
    assert "handle.fetch_history()" in said and RECIPE in said and "docs/testing.md" in said, said


def test_replay_of_a_users_own_workflow_history_says_how_to_replay_it(capsys):
    """It said to replay it 'with its own workflow's Replayer', without the plugin, which that replay needs."""
    recorded = RECORDED.parent / "users_workflows" / "ask_for_verdict.json"
    assert main(["replay", str(recorded)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: {recorded}: a history of workflow type 'AskForVerdict'") and RECIPE in err, err
