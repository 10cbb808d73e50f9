"""A run read from its history while no worker runs (`stalwart show`, `pending RUN`) finds describe_tools' result in
its local-activity marker: a tool whose own spec asks for approval (not the agent's `require_approval`) is known to
wait for it, and a fast tool's result is read from its marker as well."""

from __future__ import annotations

import asyncio

from stalwart.activities.tools.registry import tool
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.names import DESCRIBE_TOOLS_ACTIVITY
from stalwart.workers.plugin import default_tool_registry
from stalwart.workers.worker import build_worker

from support.approvals import until_pending
from support.local_activities import local_activity_calls


@tool(requires_approval=True)
async def notify_team(text: str) -> str:
    """Tells the team.

    Args:
        text: What to tell them.
    """
    return f"told: {text}"


async def test_show_without_a_worker_knows_a_tool_waits_for_approval_from_describe_tools_marker(dev_env, task_queue):
    registry = default_tool_registry()
    registry.register(notify_team)
    agent = AgentSpec(
        name="marker-reader",
        tools=["calculator", "notify_team"],
        scripted=[
            ScriptedReply(
                tool_calls=[
                    ScriptedToolCall(name="calculator", arguments={"expression": "17 * 23 + 4"}),
                    ScriptedToolCall(name="notify_team", arguments={"text": "395"}),
                ],
            ),
            ScriptedReply(text="395"),
        ],
    )
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue, registry=registry):
        handle = await stalwart.start(agent, "What is 17 * 23 + 4? Tell the team.")
        [live] = await until_pending(handle)
        while not any(s.tool_name == "calculator" and s.ended_at for s in (await handle.state()).steps):
            await asyncio.sleep(0.05)
    history = await handle.history()
    assert len(local_activity_calls(history.events, DESCRIBE_TOOLS_ACTIVITY)) == 1

    [offline] = await handle.pending_approvals()  # the worker is gone: read from history
    state = await handle.state()

    assert handle.offline is not None
    assert (offline.call_id, offline.tool_name) == (live.call_id, "notify_team")
    assert [s.result for s in state.steps if s.tool_name == "calculator"] == ["395"]
