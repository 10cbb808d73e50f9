"""Issue 43, item 6: a provider whose host does not resolve, or where nothing listens, is retried saying why.

A network failure may pass, so the model call is still retried until the run's budget; but each failed attempt
says what failed ("cannot resolve host ...: check `base_url`"), and `stalwart show` shows the last attempt's failure
while the run retries, where before nothing said why a run made no progress.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from typing import Any

from flavors import Flavor, agent_for
from temporalio.client import WorkflowHandle

from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers.worker import build_worker

from support.repo_paths import REPO

NO_SUCH_HOST = "no-such-host.invalid"


async def _last_failure(handle: WorkflowHandle[Any, Any]) -> str:
    """The message of the first pending activity's last failed attempt, once there is one."""
    while True:
        for pending in (await handle.describe()).raw_description.pending_activities:
            if pending.HasField("last_failure"):
                return pending.last_failure.message
        await asyncio.sleep(0.1)


async def _failing_run(env: Any, task_queue: str, flavor: Flavor, wire: Any, base_url: str) -> str:
    agent = agent_for(flavor, wire.script(), tools=[]).model_copy(update={"base_url": base_url})
    async with build_worker(env.client, task_queue=task_queue):
        handle = await env.client.start_workflow(
            WORKFLOW_TYPE,
            RunInput(agent=agent, goal="hello"),
            id=f"unreachable-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        try:
            return await _last_failure(handle)
        finally:
            await handle.terminate(reason="test over")


async def test_a_base_url_whose_host_does_not_resolve_is_retried_saying_so(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    failed = await _failing_run(time_skipping_env, task_queue, flavor, wire, f"http://{NO_SUCH_HOST}/v1")
    print(f"\n{flavor.id}: {failed}")
    assert f"cannot resolve host '{NO_SUCH_HOST}'" in failed and "check `base_url` in the agent file" in failed
    assert failed.endswith("the attempt is retried.")


async def test_a_base_url_where_nothing_listens_is_retried_saying_so(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    failed = await _failing_run(time_skipping_env, task_queue, flavor, wire, "http://127.0.0.1:1/v1")
    print(f"\n{flavor.id}: {failed}")
    assert "nothing accepts connections at 127.0.0.1:1 (connection refused)" in failed
    assert "check `base_url` in the agent file" in failed


async def test_show_of_a_run_that_retries_says_why_its_last_attempt_failed(dev_env, task_queue, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-show-0123456789")
    agent = {"name": "unreachable", "model": "openai:gpt-4.1-mini", "base_url": f"http://{NO_SUCH_HOST}/v1"}
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await dev_env.client.start_workflow(
            WORKFLOW_TYPE,
            RunInput.model_validate({"agent": agent, "goal": "hello"}),
            id=f"unreachable-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        try:
            await _last_failure(handle)
            show = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "stalwart.client.cli", "show", handle.id, "--address", dev_env.address],
                capture_output=True,
                text=True,
                cwd=REPO,
                env=os.environ.copy(),
                stdin=subprocess.DEVNULL,
            )
        finally:
            await handle.terminate(reason="test over")
    print(f"\n{show.stdout}{show.stderr}")
    assert show.returncode == 0, show.stderr
    [line] = [line for line in show.stdout.splitlines() if line.startswith("retrying: ")]
    assert re.match(r"retrying: model_turn: attempt (\d+) failed, attempt \d+ (at \S+ UTC|running): ", line), line
    assert f"openai (http://{NO_SUCH_HOST}/v1): cannot resolve host '{NO_SUCH_HOST}'" in line
