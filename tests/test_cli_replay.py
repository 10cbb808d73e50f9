"""`stalwart history export` records a run; `stalwart replay` is the pre-deploy gate over recorded files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import stalwart

from stalwart.client.api import StalwartClient
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
