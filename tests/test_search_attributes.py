"""What a run tells Temporal's visibility, and how few history events that costs (dev server)."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from stalwart.client.api import StalwartClient, run_input
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.workers.worker import build_worker

TOOL_TURNS = 6


def busy_agent() -> AgentSpec:
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"ping {n}"})])
        for n in range(TOOL_TURNS)
    ]
    return AgentSpec(
        name="busy", tools=["echo"], budgets=Budgets(max_steps=20), scripted=[*replies, ScriptedReply(text="done")]
    )


def our_upserts(history: WorkflowHistory) -> list[set[str]]:
    """The names in each search-attribute upsert the workflow made (the SDK's own patch bookkeeping left out)."""
    upserts = [
        set(event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    ]
    return [names_ for names_ in upserts if names_ != {"TemporalChangeVersion"}]


async def test_a_run_started_by_the_client_upserts_only_when_its_status_changes(dev_env, task_queue):
    client = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await client.start(busy_agent(), "echo six times")
        result = await handle.result()
    history = await dev_env.client.get_workflow_handle(handle.run_id).fetch_history()

    started = history.events[0].workflow_execution_started_event_attributes
    assert set(started.search_attributes.indexed_fields) == {key.name for key in names.SEARCH_ATTRIBUTES}
    assert [step.role for step in result.steps].count("assistant") == TOOL_TURNS + 1
    # Seven model steps in well under the counters' interval: one upsert, at the end, with the final counters.
    assert len(our_upserts(history)) == 1
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
