"""Operators are not blind while a worker is down (issue 11, defect 10).

Queries need a worker; with none running, `stalwart show`, `show --events` and `pending RUN` read the run from its
history instead (and say that no worker is running), `stalwart pending` handles each run on its own, and
`stalwart approve` says it waits for a worker. A run stopped by its wall-clock budget while no worker ran says when
the budget fired. The real `stalwart` command against the real dev server, with no worker polling.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest
from temporalio.worker import Worker

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools.registry import tool
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.workers.plugin import default_tool_registry
from stalwart.workers.worker import build_worker
from stalwart.workflows import AgentWorkflow

from support.approvals import until_pending
from support.repo_paths import REPO

STALWART = [sys.executable, "-m", "stalwart.client.cli"]
NO_WORKER = "no worker is running"


def _stalwart(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STALWART, *args, "--address", address],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "TEMPORAL_UI_URL": "http://localhost:8233"},
        stdin=subprocess.DEVNULL,
    )


def _agent() -> AgentSpec:
    return AgentSpec(
        name="ops-blind",
        tools=["calculator", "echo"],
        require_approval=["echo"],
        scripted=[
            ScriptedReply(
                text="Computing, then telling the team.",
                tool_calls=[
                    ScriptedToolCall(name="calculator", arguments={"expression": "17 * 23 + 4"}),
                    ScriptedToolCall(name="echo", arguments={"text": "the answer is 395"}),
                ],
            ),
            ScriptedReply(text="395, and the team knows."),
        ],
    )


@pytest.mark.slow
async def test_operators_without_a_worker_show_events_pending_and_approve_still_answer(dev_env, task_queue):
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await stalwart.start(_agent(), "What is 17 * 23 + 4? Tell the team.")
        [waiting] = await until_pending(handle)
        while not any(s.tool_name == "calculator" and s.ended_at for s in (await handle.state()).steps):
            await asyncio.sleep(0.05)
    # The worker is gone; the run waits for approval. The four commands only read, so they run side by side.
    started = time.monotonic()
    shown, events, pending_one, pending_all = await asyncio.gather(
        asyncio.to_thread(_stalwart, dev_env.address, "show", handle.run_id),
        asyncio.to_thread(_stalwart, dev_env.address, "show", handle.run_id, "--events", "--json"),
        asyncio.to_thread(_stalwart, dev_env.address, "pending", handle.run_id),
        asyncio.to_thread(_stalwart, dev_env.address, "pending"),
    )
    print(f"\nshow, show --events, pending RUN, pending without a worker: {time.monotonic() - started:.1f}s in all")

    assert shown.returncode == 0, shown.stderr
    assert "status awaiting_approval" in shown.stdout
    assert "395" in shown.stdout and "echo" in shown.stdout
    assert NO_WORKER in shown.stdout
    assert events.returncode == 0, events.stderr
    assert '"tool_result"' in events.stdout and '"395"' in events.stdout
    for pending in (pending_one, pending_all):
        assert pending.returncode == 0, pending.stderr
        assert f"{handle.run_id}  call {waiting.call_id}  echo(" in pending.stdout
        assert NO_WORKER in pending.stdout

    approve = subprocess.Popen(
        [*STALWART, "approve", handle.run_id, waiting.call_id, "--address", dev_env.address],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert approve.stderr is not None
    said = await asyncio.to_thread(approve.stderr.readline)  # blocks until the command says why it waits
    assert "waiting for a worker" in said and "stalwart worker" in said
    async with build_worker(dev_env.client, task_queue=task_queue):
        out, _ = await asyncio.to_thread(approve.communicate)
        result = await handle.result()
    assert approve.returncode == 0 and f"approved call {waiting.call_id}" in out
    assert (result.stop_reason, result.answer) == ("done", "395, and the team knows.")


sleeping = asyncio.Event()


@tool(timeout_seconds=600, heartbeat_timeout_seconds=600)
async def long_job(topic: str) -> str:
    """Works for ten minutes.

    Args:
        topic: What to work on.
    """
    sleeping.set()
    await asyncio.sleep(600)
    return "finished"


@pytest.mark.slow
async def test_operators_without_a_worker_a_result_after_an_outage_says_when_the_budget_fired(dev_env, task_queue):
    """No workflow worker at the deadline: the result is recorded later, and says when the budget fired."""
    sleeping.clear()
    client = dev_env.client
    registry = default_tool_registry()
    registry.register(long_job)
    tools, models = ToolActivities(registry), ModelActivities()
    agent = AgentSpec(
        name="outage",
        tools=["long_job"],
        scripted=[ScriptedReply(tool_calls=[ScriptedToolCall(name="long_job", arguments={"topic": "x"})])],
        budgets=Budgets(max_seconds=3),
    )
    stalwart = StalwartClient(client, task_queue=task_queue)
    async with Worker(
        client, task_queue=task_queue, activities=[models.model_turn, tools.describe_tools, tools.run_tool]
    ):
        async with Worker(client, task_queue=task_queue, workflows=[AgentWorkflow]):
            handle = await stalwart.start(agent, "work")
            await sleeping.wait()
        await asyncio.sleep(6)  # the deadline passes with no workflow worker
        async with Worker(client, task_queue=task_queue, workflows=[AgentWorkflow]):
            result = await handle.result()
    print(f"\nelapsed {result.elapsed_seconds:.2f}s, budget fired after {result.budget_fired_after_seconds}s")
    assert result.stop_reason == "max_seconds"
    fired = result.budget_fired_after_seconds
    assert fired is not None and 3.0 <= fired < 4.0  # the turn's deadline, measured from the run's start
    assert result.elapsed_seconds > fired + 1  # recorded later, when a workflow worker was back

    from stalwart.client import render

    assert f"the wall-clock budget fired {fired:.2f}s after the start" in render.budget_fired_note(result)
