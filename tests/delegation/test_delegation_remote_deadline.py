"""The parent's wall-clock budget reached while a remote (A2A) agent still works on its task.

On the dev server, in real time. The delegation activity used to time out
at the parent's remaining time, falling due with the parent's deadline and
usually first (5 of 6 runs): the parent read a failed delegation, asked the
model again at the last moment, and sometimes even ended `done`.
"""

from __future__ import annotations

import pytest
from delegation_team import call

from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, SubAgent
from stalwart.workers.worker import build_worker


@pytest.mark.slow
async def test_the_parents_wall_clock_budget_cancels_a_remote_delegation_without_another_model_turn(
    dev_env, task_queue, a2a_server
):
    lead = AgentSpec(
        name="lead",
        sub_agents=[SubAgent(name="remote", url=a2a_server.url("endless"))],
        scripted=[ScriptedReply(tool_calls=[call("remote", task="Find quantum info")]), ScriptedReply(text="unused")],
        budgets=Budgets(max_seconds=2),
    )
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        result = await (await stalwart.start(lead, "Explain")).result()
    assert result.stop_reason == "max_seconds"
    assert [s.role for s in result.steps] == ["user", "assistant", "tool"]
    assert (result.steps[2].tool_name, result.steps[2].error) == (
        "remote",
        "cancelled: wall-clock budget of 2s reached",
    )
    assert len(a2a_server.canceled) == 1
