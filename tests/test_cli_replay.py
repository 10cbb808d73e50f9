"""`stalwart history export` records a run; `stalwart replay` is the pre-deploy gate over recorded files."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from test_cli import STALWART, stalwart

from stalwart.activities.storage.encryption import KEY_FILE_VAR, KEYS_VAR
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.client.replay import STORAGE_FOLDER, chain_histories, export_run, replay_files, replay_live
from stalwart.contracts.agent import AgentSpec, ScriptedReply, SessionSettings
from stalwart.testing import replay_histories
from stalwart.workers.worker import build_worker

from support.repo_paths import AGENTS_DIR, REPO


@pytest.mark.slow
async def test_an_exported_run_replays_ok_and_a_changed_history_is_reported_with_exit_1(dev_env, task_queue, tmp_path):
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(AGENTS_DIR / "calculator.toml", "What is (17 * 23) + 4?")
        await handle.result()
    exported = stalwart("history", "export", handle.run_id, "-o", str(tmp_path / "ok"), address=dev_env.address)
    assert exported.returncode == 0, exported.stderr
    [written] = exported.stdout.split()
    replayed = stalwart("replay", str(tmp_path / "ok"))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.startswith("ok  ")

    record = json.loads(Path(written).read_text())
    for event in record["history"]["events"]:  # what the recorded run did, not what this code would do
        scheduled = event.get("activityTaskScheduledEventAttributes")
        if scheduled and scheduled["activityType"]["name"] == "model_turn":  # the calculator is a local activity
            scheduled["activityType"]["name"] = "some_other_activity"
    (tmp_path / "changed").mkdir()
    (tmp_path / "changed" / "run.000.json").write_text(json.dumps(record))
    diverged = stalwart("replay", str(tmp_path / "changed"))
    assert diverged.returncode == 1
    assert "DIVERGES" in diverged.stdout and "TMPRL1100" in diverged.stdout


@pytest.mark.slow
async def test_a_chain_that_continued_as_new_is_listed_exported_and_replayed_once(dev_env, task_queue, tmp_path):
    """A query matches every run of a chain, and each run names the whole chain: each is one entry, not N."""
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    agent = AgentSpec(
        name="chain",
        scripted=[ScriptedReply(text=f"reply {n}") for n in range(8)],
        session=SessionSettings(continue_as_new_events=20),
    )
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await client.start_session(agent)
        for n in range(8):
            await session.send(f"message {n}")
        await session.close()
    runs = len(await chain_histories(dev_env.client, session.run_id))
    assert runs >= 3
    query = f'WorkflowId="{session.run_id}"'

    assert [run.run_id for run in await client.list(query)] == [session.run_id]
    assert len(await client.list(f"{query} AND ExecutionStatus='ContinuedAsNew'")) == runs - 1

    exported = stalwart("history", "export", "--query", query, "-o", str(tmp_path), address=dev_env.address)
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.split()) == len(set(exported.stdout.split())) == runs

    replayed = await replay_live(dev_env.client, f"{query} AND ExecutionStatus='ContinuedAsNew'")
    assert sorted(outcome.run_id for outcome in replayed) == sorted({outcome.run_id for outcome in replayed})
    assert len(replayed) == runs and all(outcome.ok for outcome in replayed)


@pytest.mark.slow
async def test_replay_of_a_query_says_how_many_runs_match_and_that_limit_leaves_the_oldest_out(dev_env, task_queue):
    """A first line says how many runs the query matches; with more matches than `--limit`, it says the oldest are
    left out instead of replaying the newest in silence, and only `--limit` runs are replayed."""
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    agent = AgentSpec(name=f"limited-{uuid.uuid4().hex[:8]}", scripted=[ScriptedReply(text="done")])
    async with build_worker(dev_env.client, task_queue=task_queue):
        for n in range(3):
            await (await client.start(agent, f"goal {n}")).result()
    query = f'AgentName="{agent.name}"'

    limited = stalwart("replay", "--query", query, "--limit", "2", address=dev_env.address)
    whole = stalwart("replay", "--query", query, address=dev_env.address)

    assert limited.returncode == 0, limited.stderr
    assert [line.split()[0] for line in limited.stdout.splitlines()] == ["ok", "ok"]
    assert limited.stderr.startswith("the query matches 3 runs: replaying the newest 2 (--limit)")
    assert whole.returncode == 0, whole.stderr
    assert len(whole.stdout.splitlines()) == 3
    assert whole.stderr.startswith("replaying the 3 runs the query matches\n")


@pytest.mark.slow
async def test_a_workflow_id_used_again_after_its_session_closed_is_replayed_and_exported_as_each_of_its_chains(
    dev_env, task_queue, tmp_path
):
    """A session closed and started again under the same id is two chains: a query matching both replays both, and
    exports both, each chain's runs once, not the id's latest chain alone (whose files would overwrite the other's)."""
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    session_id = f"reused-{uuid.uuid4().hex[:8]}"
    agent = AgentSpec(
        name="reused",
        scripted=[ScriptedReply(text=f"reply {n}") for n in range(8)],
        session=SessionSettings(continue_as_new_events=20),
    )
    chains = []
    async with build_worker(dev_env.client, task_queue=task_queue):
        for _ in range(2):
            session = await client.start_session(agent, session_id=session_id)
            for n in range(7):
                await session.send(f"message {n}")
            await session.close()
            chains.append(await chain_histories(dev_env.client, session_id))
    first, second = ({history.run_id for history in chain} for chain in chains)
    assert first and second and not first & second, "two chains, each of its own runs"
    assert len(chains[0]) >= 3, "the first chain has a run in its middle"

    replayed = await replay_live(dev_env.client, f'WorkflowId="{session_id}"')

    assert sorted(outcome.run_id for outcome in replayed) == sorted(first | second)
    assert all(outcome.ok for outcome in replayed)
    from_its_middle = await chain_histories(dev_env.client, session_id, chains[0][1].run_id)
    assert [history.run_id for history in from_its_middle] == [history.run_id for history in chains[0]]

    exported = stalwart(
        "history", "export", "--query", f'WorkflowId="{session_id}"', "-o", str(tmp_path), address=dev_env.address
    )
    assert exported.returncode == 0, exported.stderr
    files = [Path(line) for line in exported.stdout.split()]
    assert len(set(files)) == len(first | second), "a file for each run of both chains"
    older = {path.name for path in files if chains[0][0].run_id in path.name}
    assert len(older) == len(first), "the older chain's files are named after its first run"
    replayed_files = await replay_files([tmp_path])
    assert sorted(o.run_id for o in replayed_files) == sorted(first | second) and all(o.ok for o in replayed_files)


def _keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEYS_VAR, raising=False)
    monkeypatch.delenv(KEY_FILE_VAR, raising=False)


@pytest.mark.slow
async def test_a_history_of_encrypted_payloads_without_the_key_is_unreadable_not_a_divergence(
    dev_env, task_queue, tmp_path, monkeypatch
):
    _keyless(monkeypatch)
    monkeypatch.setenv(KEYS_VAR, f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    keyed = await connect(dev_env.address, from_config=False)  # the workers' converter: it encrypts
    async with build_worker(keyed, task_queue=task_queue):
        handle = await StalwartClient(keyed, task_queue=task_queue).start(AGENTS_DIR / "calculator.toml", "17 * 23?")
        await handle.result()
    await export_run(keyed, handle.run_id, tmp_path)
    assert (await replay_files([tmp_path]))[0].ok, "with the key it replays"

    _keyless(monkeypatch)
    [outcome] = await replay_files([tmp_path])
    assert not outcome.ok and outcome.divergence is None
    assert outcome.unreadable is not None and KEYS_VAR in outcome.unreadable
    replayed = stalwart("replay", str(tmp_path))
    assert replayed.returncode == 1 and "Traceback" not in replayed.stderr
    assert "CANNOT READ" in replayed.stdout and KEYS_VAR in replayed.stdout
    shown = stalwart("show", handle.run_id, address=dev_env.address)
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    assert KEYS_VAR in shown.stderr


async def _exported_with_a_stored_answer(dev_env, task_queue: str, folder: Path, monkeypatch) -> Path:
    """`folder`, holding the exported history of a run whose answer was stored outside history, beside it."""
    _keyless(monkeypatch)
    monkeypatch.setenv("STALWART_STORAGE", str(folder.parent / "workers-storage"))
    monkeypatch.setenv("STALWART_STORAGE_THRESHOLD_BYTES", "2000")
    storing = await connect(dev_env.address, from_config=False)  # the workers' converter: it stores large payloads
    agent = AgentSpec(name="long", scripted=[ScriptedReply(text="read it " * 600)])
    async with build_worker(storing, task_queue=task_queue):
        handle = await StalwartClient(storing, task_queue=task_queue).start(agent, "a goal")
        await handle.result()
    await export_run(storing, handle.run_id, folder)
    assert (folder / STORAGE_FOLDER).is_dir(), "the answer was stored outside history"
    return folder


@pytest.mark.slow
async def test_a_history_without_its_stored_payloads_is_unreadable_not_a_divergence(
    dev_env, task_queue, tmp_path, monkeypatch
):
    exported = await _exported_with_a_stored_answer(dev_env, task_queue, tmp_path / "exported", monkeypatch)
    assert (await replay_files([exported]))[0].ok

    shutil.rmtree(exported / STORAGE_FOLDER)
    monkeypatch.chdir(tmp_path)  # no default storage here either
    monkeypatch.delenv("STALWART_STORAGE")
    [outcome] = await replay_files([exported])
    assert not outcome.ok and outcome.divergence is None
    assert outcome.unreadable is not None and f"{STORAGE_FOLDER}/" in outcome.unreadable


@pytest.mark.slow
async def test_a_folder_named_relative_to_here_replays_with_the_stored_payloads_beside_its_files(
    dev_env, task_queue, tmp_path, monkeypatch
):
    """`stalwart replay histories/` refused the folder once it held a `storage/` folder: "StorageConfig.local_root
    'histories/storage' is relative", nothing replayed; named absolute, the same folder replayed ok."""
    await _exported_with_a_stored_answer(dev_env, task_queue, tmp_path / "histories", monkeypatch)
    monkeypatch.delenv("STALWART_STORAGE")  # the payloads are read from beside the files, nowhere else
    monkeypatch.chdir(tmp_path)

    [outcome] = await replay_histories("histories")
    assert outcome.ok
    replayed = stalwart("replay", os.path.relpath(tmp_path / "histories", REPO))  # run from the repository
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.startswith("ok  ")


@pytest.mark.slow
async def test_a_run_that_failed_for_its_input_replays_ok(dev_env, task_queue, tmp_path):
    """Replay refuses a file whose run went on from an input that is no run input; one that failed for it, as the
    workflow fails such a run, is a true history and replays as it was."""
    from temporalio.client import WorkflowFailureError

    from stalwart.contracts.names import WORKFLOW_TYPE

    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await dev_env.client.start_workflow(
            WORKFLOW_TYPE, "just a string", id=f"bad-input-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    await export_run(dev_env.client, handle.id, tmp_path)
    [outcome] = await replay_files([tmp_path])
    assert outcome.ok, outcome


@pytest.mark.slow
async def test_the_examples_of_replay_help_record_a_run_and_replay_it_as_shown(dev_env, task_queue, tmp_path, capsys):
    """Its example, `stalwart replay tests/fixtures/histories/`, exited 2: that folder of this repository holds a
    user's own workflow's history too, which replay refuses. The examples now are the pair a user runs: export a
    run into a folder, and replay that folder, named relative to where they stand."""
    from stalwart.client.cli import main

    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    examples = [line.split("#")[0].split()[1:] for line in capsys.readouterr().out.splitlines()]
    export, replay = [argv for argv in examples if argv[:2] in (["history", "export"], ["replay", "tests/histories/"])]
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(AGENTS_DIR / "calculator.toml", "What is 17 * 23?")
        await handle.result()
    export = [handle.run_id if arg == "RUN_ID" else arg for arg in export]

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*STALWART, *argv], cwd=tmp_path, capture_output=True, text=True, check=False)

    exported = run([*export, "--address", dev_env.address])
    assert exported.returncode == 0, exported.stderr
    replayed = run(replay)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.startswith("ok  ")
