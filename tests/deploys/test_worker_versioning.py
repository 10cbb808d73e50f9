"""Worker versioning (issue 15, item 6; issue 13, item 5 with versioning), on the real dev server.

Old and new code run side by side as two versions of one worker deployment. With
`pinned` (the default) a run ends on the version it started on, while a session moves
to the new version at its next rest between turns (it continues as new onto it); with
`auto-upgrade` a run in flight moves to the new version at its next step, which is
why the new code keeps its change behind `workflow.patched`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from new_code_workflows import PatchedNewCodeWorkflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.versioning import deployment_config, describe_deployment, set_current_version
from stalwart.workers.worker import build_worker

from support import gate_tool
from support.approvals import until_pending
from support.new_code import (
    child_workflow_ids,
    failed_tasks,
    histories_of,
    lead,
    new_code_worker,
    payer,
    registry,
    summaries,
    until,
    worker_bee,
)
from support.repo_paths import REPO

pytestmark = pytest.mark.slow


def versions(histories: Sequence[WorkflowHistory]) -> list[str]:
    """The build id of each workflow task completed in these histories, in order (without repeats)."""
    seen: list[str] = []
    for history in histories:
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                build_id = event.workflow_task_completed_event_attributes.deployment_version.build_id
                if not seen or seen[-1] != build_id:
                    seen.append(build_id)
    return seen


def chatter() -> AgentSpec:
    texts = ["Hello.", "Still here.", "On the new code."]
    return AgentSpec(name="chatter", scripted=[ScriptedReply(text=text) for text in texts])


async def until_runs(handle, count: int) -> list[WorkflowHistory]:  # type: ignore[no-untyped-def]
    """The histories of a session once its chain has `count` runs (it continued as new)."""
    while len(histories := await histories_of(handle)) < count:
        await asyncio.sleep(0.1)
    return histories


async def current_version(client: Client, deployment: str) -> str:
    described = await describe_deployment(client, deployment)
    return described.worker_deployment_info.routing_config.current_deployment_version.build_id


def names(task_queue: str) -> tuple[str, str]:
    return task_queue, f"stalwart-{uuid.uuid4().hex[:8]}"


EXPECTED = {
    # Pinned: every run in flight ends on version 1 with the old code, though 2 became current; the session
    # answers its next message on 1, continues as new onto 2 and runs the new code there.
    "pinned": {
        "approval": (["1"], 0),
        "delegation": (["1"], 0),
        "sub-agent": (["1"], 0),
        "mid_turn": (["1"], 0),
        "session": ([["1"], ["2"]], [0, 1]),
        "after": (["2"], 1),
    },
    # Auto-upgrade: every run in flight moves to 2 at its next workflow task; those that had not ended a turn on
    # the old code take the new step there (behind its patch), the session, which had, keeps the old path.
    "auto-upgrade": {
        "approval": (["1", "2"], 1),
        "delegation": (["1", "2"], 1),
        "sub-agent": (["1", "2"], 1),
        "mid_turn": (["1", "2"], 1),
        "session": ([["1", "2"]], [0]),
        "after": (["2"], 1),
    },
}


@pytest.mark.parametrize("behaviour", ["pinned", "auto-upgrade"])
async def test_runs_in_flight_meet_a_new_version_as_their_versioning_behaviour_says(dev_env, behaviour):
    client = dev_env.client
    task_queue, deployment = names(f"{behaviour}-{uuid.uuid4().hex[:8]}")
    stalwart = StalwartClient(client, task_queue=task_queue)
    gate_tool.gate.clear()
    gate_tool.calls.clear()
    old_config = deployment_config(deployment, "1", behaviour)
    async with build_worker(client, task_queue=task_queue, registry=registry(), deployment_config=old_config):
        await set_current_version(client, deployment, "1")
        approval = await stalwart.start(payer(), "pay 100")
        pending = await until_pending(approval)
        delegation = await stalwart.start(lead(), "explain quantum computing")
        mid_turn = await stalwart.start(worker_bee(), "do the job")
        session = await stalwart.start_session(chatter())
        first = await session.send("hi")
        await until(lambda: {"sub", "mid"} <= set(gate_tool.calls))
        new_config = deployment_config(deployment, "2", behaviour)
        async with new_code_worker(client, task_queue, PatchedNewCodeWorkflow, deployment_config=new_config):
            # Side by side: the old version keeps serving what stays on it.
            await set_current_version(client, deployment, "2")
            gate_tool.gate.set()
            await approval.approve(pending[0].call_id)
            results = {
                "approval": await approval.result(),
                "delegation": await delegation.result(),
                "mid_turn": await mid_turn.result(),
            }
            second = await session.send("still there?")
            if behaviour == "pinned":
                await until_runs(session, 2)  # it continued as new onto version 2 after answering on 1
            third = await session.send("and now?")
            after = await stalwart.start(payer(), "pay 100 again")
            await after.approve((await until_pending(after))[0].call_id)
            results["after"] = await after.result()
            histories = {
                name: await histories_of(handle)
                for name, handle in [
                    ("approval", approval),
                    ("delegation", delegation),
                    ("mid_turn", mid_turn),
                    ("after", after),
                ]
            }
            [child] = child_workflow_ids(histories["delegation"])
            histories["sub-agent"] = await histories_of(stalwart.get(child))
            histories["session"] = await histories_of(session)
            await session.close()

    assert [r.answer for r in (first, second, third)] == ["Hello.", "Still here.", "On the new code."]
    assert {name: r.answer for name, r in results.items()} == {
        "approval": "Paid.",
        "delegation": "The researcher says: qubits.",
        "mid_turn": "Job done.",
        "after": "Paid.",
    }
    assert Counter(gate_tool.calls) == {"sub": 1, "mid": 1}  # no call was cut off: the old workers stayed
    observed = {name: (versions(h), summaries(h)) for name, h in histories.items() if name != "session"}
    observed["session"] = (
        [versions([h]) for h in histories["session"]],
        [summaries([h]) for h in histories["session"]],
    )
    assert observed == EXPECTED[behaviour]
    assert {name: failed_tasks(h) for name, h in histories.items()} == {name: [] for name in histories}


def test_the_worker_command_refuses_half_a_version_and_says_what_is_missing():
    env = {**os.environ, "STALWART_DEPLOYMENT_NAME": "", "STALWART_BUILD_ID": ""}
    command = [sys.executable, "-m", "stalwart.client.cli", "worker", "--address", "127.0.0.1:1"]
    with ThreadPoolExecutor(max_workers=2) as pool:  # two refusals, side by side
        only_build, dotted = pool.map(
            lambda options: subprocess.run([*command, *options], capture_output=True, text=True, env=env),
            [("--build-id", "7"), ("--deployment-name", "a.b", "--build-id", "7")],
        )
    assert only_build.returncode != 0 and "--build-id needs --deployment-name too" in only_build.stderr
    assert dotted.returncode != 0 and "must be non-empty and contain no '.'" in dotted.stderr


async def test_the_worker_command_runs_a_named_version_and_makes_it_current(dev_env, tmp_path: Path):
    task_queue, deployment = names(f"cli-{uuid.uuid4().hex[:8]}")
    log = tmp_path / "worker.log"
    command = [
        *(sys.executable, "-m", "stalwart.client.cli", "worker", "--address", dev_env.address),
        *("--task-queue", task_queue, "--deployment-name", deployment, "--build-id", "abc123", "--set-current"),
    ]
    with log.open("w") as out:
        worker = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, stdin=subprocess.DEVNULL)
    try:
        stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
        agent = AgentSpec(name="hello", scripted=[ScriptedReply(text="Hi.")])
        handle = await stalwart.start(agent, "say hi")
        result = await handle.result()
        histories = await histories_of(handle)
        current = await current_version(dev_env.client, deployment)
    finally:
        worker.terminate()
        worker.wait()
    assert result.answer == "Hi."
    assert current == "abc123"
    assert versions(histories) == ["abc123"]
    assert f"worker version {deployment}.abc123 (pinned)" in log.read_text()
