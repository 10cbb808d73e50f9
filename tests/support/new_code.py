"""Old and new code side by side: the tools, agents and workers of the tests in tests/deploys/."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from new_code_workflows import SUMMARY_ACTIVITY, summarise_turn
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Worker, WorkerConfig

from stalwart.activities.tools import tool
from stalwart.activities.tools.registry import ToolRegistry
from stalwart.client.api import RunHandle
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall, SubAgent
from stalwart.workers.plugin import StalwartPlugin
from stalwart.workers.worker import default_registry
from stalwart.workflows import AgentWorkflow

from support import gate_tool


@tool(requires_approval=True)
def transfer_money(amount: int) -> str:
    """Move money; a person approves every call.

    Args:
        amount: Dollars to move.
    """
    return f"transferred ${amount}"


def call(name: str, **arguments: object) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, arguments=arguments)


def registry() -> ToolRegistry:
    tools = default_registry()
    tools.register(transfer_money)
    tools.register(gate_tool.gated_job)
    return tools


class NewCodePlugin(StalwartPlugin):
    """Stalwart with `workflow` in place of the released AgentWorkflow (same type name) and its new activity."""

    def __init__(self, workflow: type, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.workflow = workflow

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        config["workflows"] = [self.workflow if w is AgentWorkflow else w for w in config.get("workflows") or ()]
        config["activities"] = [*(config.get("activities") or ()), summarise_turn]
        return config


def new_code_worker(client: Client, task_queue: str, workflow: type, **options: object) -> Worker:
    return Worker(client, task_queue=task_queue, plugins=[NewCodePlugin(workflow, registry=registry())], **options)


def payer() -> AgentSpec:
    return AgentSpec(
        name="payer",
        tools=["transfer_money"],
        scripted=[ScriptedReply(tool_calls=[call("transfer_money", amount=100)]), ScriptedReply(text="Paid.")],
    )


async def histories_of(handle: RunHandle) -> list[WorkflowHistory]:
    return await handle.histories()


def summaries(histories: Sequence[WorkflowHistory]) -> int:
    """How many times the new step ran in these histories."""
    return sum(
        1
        for history in histories
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == SUMMARY_ACTIVITY
    )


def failed_tasks(histories: Sequence[WorkflowHistory]) -> list[str]:
    return [
        event.workflow_task_failed_event_attributes.failure.message
        for history in histories
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


def lead() -> AgentSpec:
    researcher = AgentSpec(
        name="researcher",
        description="Finds facts.",
        tools=["gated_job"],
        scripted=[ScriptedReply(tool_calls=[call("gated_job", topic="sub")]), ScriptedReply(text="Qubits.")],
    )
    return AgentSpec(
        name="lead",
        sub_agents=[SubAgent(name="researcher", spec=researcher)],
        scripted=[
            ScriptedReply(tool_calls=[call("researcher", task="Find quantum info")]),
            ScriptedReply(text="The researcher says: qubits."),
        ],
    )


def worker_bee() -> AgentSpec:
    return AgentSpec(
        name="bee",
        tools=["gated_job"],
        scripted=[ScriptedReply(tool_calls=[call("gated_job", topic="mid")]), ScriptedReply(text="Job done.")],
    )


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.05)


def child_workflow_ids(histories: Sequence[WorkflowHistory]) -> list[str]:
    """The workflow ids of the child runs (sub-agents) these histories started."""
    return [
        event.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
        for history in histories
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
    ]
