"""`stalwart history export` records a run; `stalwart replay` is the pre-deploy gate over recorded files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import stalwart

from stalwart.client.api import StalwartClient
from stalwart.client.replay import chain_histories, replay_live
from stalwart.contracts import AgentSpec, ScriptedReply
from stalwart.contracts.agent import SessionSettings
from stalwart.workers.worker import build_worker

from support.repo_paths import AGENTS_DIR


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
        if scheduled and scheduled["activityType"]["name"] == "run_tool":
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
