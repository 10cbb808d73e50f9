"""Issue 10, defect 6: the goal has a stated maximum size, checked before the run starts and by the workflow.

The goal travels in the run's input and again in its first model call, and a session's goal is its first
message; so it obeys the limit every message does: `[session] max_message_chars` (default 1,000,000).
"""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from stalwart.client.api import InvalidRunInput, StalwartClient
from stalwart.contracts.agent import DEFAULT_MAX_MESSAGE_CHARS, AgentSpec, ScriptedReply
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput

LIMIT = 100


def _agent() -> AgentSpec:
    return AgentSpec(name="small", session={"max_message_chars": LIMIT}, scripted=[ScriptedReply(text="ok")])


def test_goal_size_the_default_limit_is_stated():
    assert AgentSpec(name="a").session.max_message_chars == DEFAULT_MAX_MESSAGE_CHARS == 10_000_000
    assert "max_message_chars" in RunInput.model_fields["goal"].description


async def test_goal_size_a_goal_over_the_limit_is_refused_before_the_run_starts(time_skipping_env, task_queue):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    for start in (
        lambda: stalwart.start(_agent(), "x" * (LIMIT + 1), run_id=f"never-{task_queue}"),
        lambda: stalwart.send(f"never-{task_queue}-s", "x" * (LIMIT + 1), agent=_agent()),
    ):
        with pytest.raises(InvalidRunInput) as refused:
            await start()
        assert f"{LIMIT + 1:,} characters" in str(refused.value) and "max_message_chars" in str(refused.value)
    for never in (f"never-{task_queue}", f"never-{task_queue}-s"):
        with pytest.raises(RPCError) as missing:
            await time_skipping_env.client.get_workflow_handle(never).describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND, "nothing was started"


@pytest.mark.parametrize("goal", ["", "  \n\t"])
async def test_an_empty_goal_is_refused_before_the_run_starts(time_skipping_env, task_queue, goal):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    with pytest.raises(InvalidRunInput, match="a run needs a goal"):
        await stalwart.start(_agent(), goal, run_id=f"never-{task_queue}")
    with pytest.raises(RPCError) as missing:
        await time_skipping_env.client.get_workflow_handle(f"never-{task_queue}").describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND, "nothing was started"


async def test_goal_size_a_goal_at_the_limit_runs(time_skipping_env, task_queue, worker_with):
    async with worker_with():
        result = await StalwartClient(time_skipping_env.client, task_queue=task_queue).run(_agent(), "x" * LIMIT)
    assert result.stop_reason == "done"


@pytest.mark.parametrize("session", [False, True], ids=["run", "session"])
async def test_goal_size_a_goal_over_the_limit_from_another_client_fails_the_run_at_once(
    time_skipping_env, task_queue, worker_with, session
):
    raw = {"agent": _agent().model_dump(mode="json"), "goal": "x" * (LIMIT + 1), "session": session}
    async with worker_with():
        handle = await time_skipping_env.client.start_workflow(
            WORKFLOW_TYPE, raw, id=f"big-goal-{uuid.uuid4().hex[:8]}", task_queue=task_queue, result_type=AgentResult
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    message = str(failed.value.cause)
    assert "invalid run input" in message and "max_message_chars" in message and f"{LIMIT + 1:,}" in message


async def test_goal_size_an_a2a_message_over_the_limit_is_an_invalid_params_error(time_skipping_env, task_queue):
    """A message to an agent served over A2A becomes its goal: too long, it is refused as JSON-RPC, not a 500."""
    import httpx

    from stalwart.client.a2a_server import A2AAgentServer

    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    server = A2AAgentServer(stalwart, _agent(), public_url="http://a2a.test/")
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "x" * (LIMIT + 1)}]}
    transport = httpx.ASGITransport(app=server.app())
    async with httpx.AsyncClient(transport=transport, base_url="http://a2a.test") as http:
        request = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        response = await http.post("/", json=request)
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32602 and "max_message_chars" in error["message"]
