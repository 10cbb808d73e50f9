"""Changing code under running agents (issue 13, item 5), on the real dev server.

Runs start on the old code (the released `AgentWorkflow`) and stop in each of the
places an agent waits: for a person's approval, inside a sub-agent, a session idle
between messages, and mid-turn with a tool call running. The old worker then stops
and a worker with new code takes over: a release that runs one more activity after
every turn (tests/new_code_workflows.py). Made behind `workflow.patched`, every run
finishes with the answer it would have given, and those that had not yet ended a
turn on the old code take the new step; made without the patch, the histories of
the old code no longer replay (the negative control).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Sequence

import pytest
from new_code_workflows import PatchedNewCodeWorkflow, UnpatchedNewCodeWorkflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.worker import build_worker

from support import gate_tool
from support.approvals import until_pending
from support.new_code import (
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

pytestmark = pytest.mark.slow


def chatter() -> AgentSpec:
    return AgentSpec(name="chatter", scripted=[ScriptedReply(text="Hello."), ScriptedReply(text="Still here.")])


async def replay(histories: Sequence[WorkflowHistory], workflow: type) -> list[Exception | None]:
    replayer = Replayer(workflows=[workflow], data_converter=stalwart_converter())
    results = []
    for history in histories:
        outcome = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        results.append(outcome.replay_failure)
    return results


async def test_runs_started_on_old_code_finish_on_new_code_made_behind_a_patch(dev_env):
    client, task_queue = dev_env.client, f"deploy-{uuid.uuid4().hex[:8]}"
    stalwart = StalwartClient(client, task_queue=task_queue)
    gate_tool.gate.clear()
    gate_tool.calls.clear()

    async with build_worker(client, task_queue=task_queue, registry=registry()):  # the old code
        finished = await stalwart.start(chatter(), "a run that ends on the old code")
        assert (await finished.result()).answer == "Hello."
        approval = await stalwart.start(payer(), "pay 100")
        await until_pending(approval)
        delegation = await stalwart.start(lead(), "explain quantum computing")
        mid_turn = await stalwart.start(worker_bee(), "do the job")
        session = await stalwart.start_session(chatter())
        assert (await session.send("hi")).answer == "Hello."
        await until(lambda: {"sub", "mid"} <= set(gate_tool.calls))  # the sub-agent's and the run's tool calls
        old_state = {
            "approval": (await approval.state()).status,
            "session": (await session.state()).status,
            "mid_turn": (await mid_turn.state()).status,
        }
    # The old worker is gone; the tool calls it was running were cut off with it.
    async with new_code_worker(client, task_queue, PatchedNewCodeWorkflow):
        gate_tool.gate.set()
        await approval.approve(call_id=(await approval.pending_approvals())[0].call_id)
        results = {
            "approval": await approval.result(),
            "delegation": await delegation.result(),
            "mid_turn": await mid_turn.result(),
        }
        results["session"] = await session.send("are you there?")
        await session.close()
        after = await stalwart.start(worker_bee(), "a run that starts on the new code")
        results["after"] = await after.result()
        histories = {
            "approval": await histories_of(approval),
            "delegation": await histories_of(delegation),
            "mid_turn": await histories_of(mid_turn),
            "session": await histories_of(session),
            "after": await histories_of(after),
        }
        old_history = (await histories_of(finished))[0]

    assert old_state == {"approval": "awaiting_approval", "session": "waiting", "mid_turn": "running"}
    # The tool calls the old worker was running were cut off with it and tried again on the new one (the run
    # started on the new code makes the third "mid" call).
    assert Counter(gate_tool.calls) == {"sub": 2, "mid": 3}
    assert {name: (r.answer, r.stop_reason) for name, r in results.items()} == {
        "approval": ("Paid.", "done"),
        "delegation": ("The researcher says: qubits.", "done"),
        "mid_turn": ("Job done.", "done"),
        "session": ("Still here.", "done"),
        "after": ("Job done.", "done"),
    }
    assert results["approval"].steps[2].result == "transferred $100"
    assert results["delegation"].steps[2].result == "Qubits."
    # No workflow task of any run failed: the new code replayed every history the old code wrote.
    assert {name: failed_tasks(h) for name, h in histories.items()} == {name: [] for name in histories}
    # The new step ran where the old code had not yet ended a turn: the run waiting for approval, the delegating
    # run and the run mid-turn each take it once; the session, whose first turn ended on the old code, decided
    # `patched` is False for the rest of its run (a patch decides once per run); a new run takes it.
    assert {name: summaries(h) for name, h in histories.items()} == {
        "approval": 1,
        "delegation": 1,
        "mid_turn": 1,
        "session": 0,
        "after": 1,
    }
    # Every history now replays on the new code, and on the same change without its patch some do not:
    everything = [h for hs in histories.values() for h in hs] + [old_history]
    assert await replay(everything, PatchedNewCodeWorkflow) == [None] * len(everything)
    unpatched = await replay([old_history, *histories["session"]], UnpatchedNewCodeWorkflow)
    assert all(isinstance(failure, NondeterminismError) for failure in unpatched), unpatched
    # The code scheduled the new activity where the history has what the old code did next.
    assert all("Nondeterminism error: Activity machine" in str(failure) for failure in unpatched), unpatched


async def test_the_same_change_without_the_patch_stops_a_session_that_ended_a_turn_on_the_old_code(dev_env):
    """The negative control, live: the unpatched release cannot go on with a session the old code left idle."""
    client, task_queue = dev_env.client, f"deploy-{uuid.uuid4().hex[:8]}"
    stalwart = StalwartClient(client, task_queue=task_queue)
    async with build_worker(client, task_queue=task_queue, registry=registry()):
        session = await stalwart.start_session(chatter())
        assert (await session.send("hi")).answer == "Hello."
    async with new_code_worker(client, task_queue, UnpatchedNewCodeWorkflow):
        reply = asyncio.ensure_future(session.send("are you there?"))
        while not failed_tasks(await histories_of(session)):
            await asyncio.sleep(0.1)
        failures = failed_tasks(await histories_of(session))
        reply.cancel()
    await client.get_workflow_handle(session.run_id).terminate("negative control over")
    assert "[TMPRL1100] Nondeterminism error: Activity machine" in failures[0], failures
