"""What a run tells Temporal's visibility, and how few history events that costs (dev server)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from stalwart.activities.tools import tool
from stalwart.client.api import StalwartClient, run_input
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.workers.worker import build_worker, default_registry
from stalwart.workflows.policies import COUNTERS_EVERY

TOOL_TURNS = 6


def busy_agent() -> AgentSpec:
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"ping {n}"})])
        for n in range(TOOL_TURNS)
    ]
    return AgentSpec(
        name="busy", tools=["echo"], budgets=Budgets(max_steps=20), scripted=[*replies, ScriptedReply(text="done")]
    )


def our_upserts(history: WorkflowHistory) -> list[tuple[datetime, dict[str, Any]]]:
    """Each search-attribute upsert the workflow made (the SDK's own patch bookkeeping left out): the workflow's
    time when it made it (its workflow task's start) and the values it set."""
    task_started = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            started_id = event.workflow_task_completed_event_attributes.started_event_id
            task_started[event.event_id] = history.events[started_id - 1].event_time.ToDatetime()
    made = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            continue
        attributes = event.upsert_workflow_search_attributes_event_attributes
        fields = attributes.search_attributes.indexed_fields
        if set(fields) != {"TemporalChangeVersion"}:
            values = {name: json.loads(payload.data) for name, payload in fields.items()}
            made.append((task_started[attributes.workflow_task_completed_event_id], values))
    return made


async def test_a_run_started_by_the_client_upserts_only_when_its_status_changes(dev_env, task_queue):
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(busy_agent(), "echo six times")
        result = await handle.result()
    history = await dev_env.client.get_workflow_handle(handle.run_id).fetch_history()

    started = history.events[0].workflow_execution_started_event_attributes
    assert set(started.search_attributes.indexed_fields) == {key.name for key in names.SEARCH_ATTRIBUTES}
    assert [step.role for step in result.steps].count("assistant") == TOOL_TURNS + 1
    *counters_only, (_, last) = our_upserts(history)
    assert last["AgentStatus"] == "done" and last["AgentSteps"] == TOOL_TURNS + 1, "the end goes out at once"
    # Between the start (all set by the client) and the end, only the counters may go out, at most every 5 s.
    previous = history.events[0].event_time.ToDatetime()
    for made_at, values in counters_only:
        assert set(values) <= {"AgentSteps", "AgentTokens", "AgentCostUsd"}
        assert made_at - previous >= COUNTERS_EVERY
        previous = made_at
    described = (await dev_env.client.get_workflow_handle(handle.run_id).describe()).typed_search_attributes
    assert described.get(names.AGENT_STATUS) == "done"
    assert described.get(names.AGENT_STEPS) == TOOL_TURNS + 1
    assert described.get(names.AGENT_TOKENS) == result.usage.total_tokens


async def test_a_run_started_without_search_attributes_publishes_them_itself(dev_env, task_queue):
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await dev_env.client.start_workflow(
            names.WORKFLOW_TYPE, run_input(busy_agent(), "echo six times"), id=task_queue, task_queue=task_queue
        )
        await handle.result()
    described = (await handle.describe()).typed_search_attributes
    assert described.get(names.AGENT_NAME) == "busy"
    assert described.get(names.AGENT_STATUS) == "done"
    assert described.get(names.AGENT_STEPS) == TOOL_TURNS + 1
    assert described.get(names.AGENT_AWAITING_APPROVAL) is False


async def test_an_open_session_is_listed_waiting_while_a_turn_runs_and_its_state_says_running(dev_env, task_queue):
    """Each turn used to publish `running` and then `waiting`: two upserts, a quarter of a session turn's time
    (bench/step_cost.py). The list now shows an open session as `waiting` for messages throughout; whether a
    turn is running is live in its state (`stalwart show`). Only the session's end changes its status."""
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    entered, release = asyncio.Event(), asyncio.Event()

    @tool
    async def hold(text: str) -> str:
        """Wait until the test lets the turn go on."""
        entered.set()
        await release.wait()
        return text

    registry = default_registry()
    registry.register(hold)
    agent = AgentSpec(
        name="chatty",
        tools=["hold"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="hold", arguments={"text": "held"})]),
            ScriptedReply(text="one"),
            ScriptedReply(text="two"),
        ],
    )
    async with build_worker(dev_env.client, task_queue=task_queue, registry=registry):
        session = await client.start_session(agent)
        first = asyncio.create_task(session.send("first"))
        await entered.wait()
        during = await session.state()
        listed = (await dev_env.client.get_workflow_handle(session.run_id).describe()).typed_search_attributes
        release.set()
        assert (await first).answer == "one"
        assert (await session.send("second")).answer == "two"
        await session.close()
    history = await dev_env.client.get_workflow_handle(session.run_id).fetch_history()

    assert (during.status, listed.get(names.AGENT_STATUS)) == ("running", "waiting")
    statuses = [values["AgentStatus"] for _, values in our_upserts(history) if "AgentStatus" in values]
    assert statuses == ["closed"]
