"""RunHandle, the typed handle on one run, as `stalwart run` uses it to follow a run."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client, Interceptor, OutboundInterceptor, QueryWorkflowInput

from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.workers.worker import build_worker

from support.approvals import until_pending


class QueriesInFlight(Interceptor):
    """Counts the client's queries that are waiting for an answer at the same moment."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.total = 0

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Counting(next, self)


class _Counting(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, counter: QueriesInFlight) -> None:
        super().__init__(next)
        self.counter = counter

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        counter = self.counter
        counter.now += 1
        counter.total += 1
        counter.most = max(counter.most, counter.now)
        try:
            return await super().query_workflow(input)
        finally:
            counter.now -= 1


def careful_calculator() -> AgentSpec:
    return AgentSpec(
        name="careful",
        tools=["calculator"],
        require_approval=["calculator"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "2+3"}, id="add")]),
            ScriptedReply(text="5"),
        ],
    )


async def test_a_run_handle_asks_its_workflow_one_query_at_a_time(time_skipping_env, task_queue):
    # Two queries in flight together while a workflow task runs hold the second back for about a
    # second: `stalwart run` printed its first steps late, all at once, until its pollers took turns.
    counter = QueriesInFlight()
    temporal = Client(**{**time_skipping_env.client.config(), "interceptors": [counter]})
    stalwart = StalwartClient(temporal, task_queue=task_queue)
    async with build_worker(temporal, task_queue=task_queue):
        handle = await stalwart.start(careful_calculator(), "add")
        await until_pending(handle)
        answers = await asyncio.gather(
            *[ask() for _ in range(4) for ask in (handle.state, handle.pending_approvals, handle.events)]
        )
        await handle.approve("add")
        result = await handle.result()
    assert counter.total >= 12 and counter.most == 1
    assert all(state.status == "awaiting_approval" for state in answers[0::3])
    assert all([p.call_id for p in pending] == ["add"] for pending in answers[1::3])
    assert result.answer == "5"


async def test_a_terminated_run_is_listed_as_terminated_not_as_it_last_said(dev_env, task_queue):
    # The workflow cannot write its status when it is terminated: its AgentStatus stays `awaiting_approval`.
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await stalwart.start(careful_calculator(), "add")
        await until_pending(handle)
        await dev_env.client.get_workflow_handle(handle.run_id).terminate(reason="test")
    query = f'WorkflowId = "{handle.run_id}"'
    while (listed := await stalwart.list(query)) == [] or listed[0].temporal_status != "terminated":
        await asyncio.sleep(0.1)
    assert listed[0].status == "terminated"
