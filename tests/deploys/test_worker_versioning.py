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
from collections.abc import Sequence
from pathlib import Path

import pytest
from new_code_workflows import PatchedNewCodeWorkflow
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client, WorkflowHistory

from stalwart.client.api import StalwartClient
from stalwart.contracts import AgentSpec, ScriptedReply
from stalwart.workers.versioning import deployment_config, set_current_version
from stalwart.workers.worker import build_worker

from support.approvals import until_pending
from support.new_code import histories_of, new_code_worker, payer, registry, summaries
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
    described = await client.workflow_service.describe_worker_deployment(
        DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
    )
    return described.worker_deployment_info.routing_config.current_deployment_version.build_id


def names(task_queue: str) -> tuple[str, str]:
    return task_queue, f"stalwart-{uuid.uuid4().hex[:8]}"


async def test_pinned_runs_end_on_their_version_and_sessions_move_to_the_new_one_at_rest(dev_env):
    client = dev_env.client
    task_queue, deployment = names(f"pinned-{uuid.uuid4().hex[:8]}")
    stalwart = StalwartClient(client, task_queue=task_queue)
    old = build_worker(
        client, task_queue=task_queue, registry=registry(), deployment_config=deployment_config(deployment, "1")
    )
    async with old:
        await set_current_version(client, deployment, "1")
        approval = await stalwart.start(payer(), "pay 100")
        pending = await until_pending(approval)
        session = await stalwart.start_session(chatter())
        first = await session.send("hi")
        new = new_code_worker(
            client, task_queue, PatchedNewCodeWorkflow, deployment_config=deployment_config(deployment, "2")
        )
        async with new:  # side by side: the old version keeps serving what is pinned to it
            await set_current_version(client, deployment, "2")
            await approval.approve(pending[0].call_id)
            paid = await approval.result()
            second = await session.send("still there?")  # answered on 1, then the session moves to 2
            await until_runs(session, 2)
            third = await session.send("and now?")
            after = await stalwart.start(payer(), "pay 100 again")
            await until_pending(after)
            await after.approve((await after.pending_approvals())[0].call_id)
            fresh = await after.result()
            session_histories = await histories_of(session)
            approval_histories = await histories_of(approval)
            after_histories = await histories_of(after)
            await session.close()

    assert [r.answer for r in (first, second, third)] == ["Hello.", "Still here.", "On the new code."]
    assert (paid.answer, fresh.answer) == ("Paid.", "Paid.")
    # The pinned run ended on version 1 with the old code (no new step), though 2 was current.
    assert (versions(approval_histories), summaries(approval_histories)) == (["1"], 0)
    # The session: its first run stayed on 1 (both turns), continued as new onto 2 and ran the new code there.
    assert [versions([h]) for h in session_histories] == [["1"], ["2"]]
    assert (summaries(session_histories[:1]), summaries(session_histories[1:])) == (0, 1)
    # A run started after the switch runs on 2 from its start.
    assert (versions(after_histories), summaries(after_histories)) == (["2"], 1)


async def test_auto_upgrade_runs_move_to_the_new_version_at_their_next_step(dev_env):
    client = dev_env.client
    task_queue, deployment = names(f"upgrade-{uuid.uuid4().hex[:8]}")
    stalwart = StalwartClient(client, task_queue=task_queue)
    old_config = deployment_config(deployment, "1", "auto-upgrade")
    async with build_worker(client, task_queue=task_queue, registry=registry(), deployment_config=old_config):
        await set_current_version(client, deployment, "1")
        approval = await stalwart.start(payer(), "pay 100")
        pending = await until_pending(approval)
        new_config = deployment_config(deployment, "2", "auto-upgrade")
        async with new_code_worker(client, task_queue, PatchedNewCodeWorkflow, deployment_config=new_config):
            await set_current_version(client, deployment, "2")
            await approval.approve(pending[0].call_id)
            paid = await approval.result()
            histories = await histories_of(approval)

    assert paid.answer == "Paid."
    # Started on 1, finished on 2 with the new code, which took its new step as the run had not ended a turn yet.
    assert (versions(histories), summaries(histories)) == (["1", "2"], 1)


def test_the_worker_command_refuses_half_a_version_and_says_what_is_missing():
    env = {**os.environ, "STALWART_DEPLOYMENT_NAME": "", "STALWART_BUILD_ID": ""}
    command = [sys.executable, "-m", "stalwart.client.cli", "worker", "--address", "127.0.0.1:1"]
    only_build = subprocess.run([*command, "--build-id", "7"], capture_output=True, text=True, env=env)
    dotted = subprocess.run(
        [*command, "--deployment-name", "a.b", "--build-id", "7"], capture_output=True, text=True, env=env
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
