"""The command line and typed output: `stalwart run --json` prints the validated output of the example agent."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from stalwart.workers.worker import build_worker

from support.repo_paths import AGENTS_DIR, REPO


@pytest.mark.slow
async def test_run_json_prints_the_output_of_the_example_agent(dev_env, task_queue):
    command = [sys.executable, "-m", "stalwart.client.cli", "run", str(AGENTS_DIR / "refund_proposer.toml")]
    command += ["Refund order A-1042: one of its two items arrived broken", "--json"]
    command += ["--address", dev_env.address, "--task-queue", task_queue]
    async with build_worker(dev_env.client, task_queue=task_queue):
        ran = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, cwd=REPO, env=dict(os.environ)
        )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["stop_reason"] == "done"
    assert result["output"] == {"order_id": "A-1042", "amount": 19.99, "reason": "one of two items arrived broken"}
    refused = [step["error"] for step in result["steps"] if step["role"] == "assistant" and step.get("error")]
    assert len(refused) == 1 and "missing required property amount" in refused[0]
