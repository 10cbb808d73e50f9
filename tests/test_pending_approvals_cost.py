"""`pending_approvals` costs one query per run, open or closed: `awaiting_approval` and `stalwart pending` ask it of
every run they list, and a `describe` before each query (to leave out a run that has ended) doubled their RPCs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from test_run_handle import careful_calculator

from stalwart.client.api import StalwartClient
from stalwart.client.reader import RunReader
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.worker import build_worker

from support.approvals import until_pending

RPCS = ("describe_workflow_execution", "query_workflow")


@pytest.fixture
def rpcs(dev_env, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The client's describe and query RPCs, counted from when the test resets the counter."""
    counted: Counter[str] = Counter()
    service = dev_env.client.workflow_service
    for name in RPCS:
        call = getattr(service, name)

        async def counting(*args: Any, _call: Any = call, _name: str = name, **kwargs: Any) -> Any:
            counted[_name] += 1
            return await _call(*args, **kwargs)

        monkeypatch.setattr(service, name, counting)
    return counted


def chatter() -> AgentSpec:
    return AgentSpec(name="chatter", scripted=[ScriptedReply(text="hello")])


async def test_an_open_run_with_no_waiting_call_costs_one_query_and_no_describe(dev_env, task_queue, rpcs, opened):
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await stalwart.start_session(chatter())  # open, waiting for a message: no call waits
        opened.append(session.run_id)
        await session.state()  # a worker holds the run
        rpcs.clear()
        pending = await stalwart.get(session.run_id).pending_approvals()
    assert pending == []
    assert rpcs == {"query_workflow": 1}


async def test_a_run_with_a_waiting_call_lists_it_with_one_query_and_no_describe(dev_env, task_queue, rpcs, opened):
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await stalwart.start(careful_calculator(), "add")
        opened.append(handle.run_id)
        await until_pending(handle)
        rpcs.clear()
        pending = await stalwart.get(handle.run_id).pending_approvals()
    assert [p.call_id for p in pending] == ["add"]
    assert rpcs == {"query_workflow": 1}


async def test_a_closed_run_lists_nothing_and_says_it_closed_with_one_query_and_no_worker(dev_env, task_queue, rpcs):
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue):
        handle = await stalwart.start(careful_calculator(), "add")
        await until_pending(handle)
        await dev_env.client.get_workflow_handle(handle.run_id).terminate(reason="test over")
    # No worker from here on: a replay of the history would list the call it was terminated on as waiting.
    reader = RunReader(
        dev_env.client.workflow_service,
        dev_env.client.namespace,
        dev_env.client.data_converter,
        handle.run_id,
        stalwart.ui_url,
    )
    rpcs.clear()
    through_the_sdk, through_the_service = stalwart.get(handle.run_id), reader
    assert await through_the_sdk.pending_approvals() == [] and through_the_sdk.closed
    assert await through_the_service.pending_approvals() == [] and through_the_service.closed
    assert rpcs == {"query_workflow": 2}
