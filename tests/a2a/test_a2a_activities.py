"""The A2A activities as real Temporal activities: a worker on the time-skipping server, a live A2A server over HTTP."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from a2a_requests import delegate
from a2a_workflows import DelegateWorkflow, DescribeWorkflow
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from stalwart.contracts import a2a as a2a_contract
from stalwart.contracts.a2a import A2ADelegateRequest, A2ADescribeRequest
from stalwart.workers.dev_server import free_port

from support.a2a_agents import A2AServer, roster
from support.a2a_http import serving


async def run_delegate(env, task_queue: str, request: A2ADelegateRequest):
    return await env.client.execute_workflow(
        DelegateWorkflow.run, request, id=f"delegate-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )


async def test_describe_reads_name_description_and_skills_from_the_card(
    time_skipping_env, task_queue, a2a_server, a2a_worker
):
    async with a2a_worker:
        card = await time_skipping_env.client.execute_workflow(
            DescribeWorkflow.run,
            A2ADescribeRequest(url=a2a_server.url("echo")),
            id=f"describe-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
    assert (card.name, card.description, card.protocol_version) == ("echo", "Repeats what it is told.", "1.0")
    assert card.card_url == f"{a2a_server.url('echo')}/.well-known/agent-card.json"
    assert card.endpoint == f"{a2a_server.url('echo')}/rpc"
    assert [(s.id, s.name, s.examples) for s in card.skills] == [("research", "Research", ["Find papers on qubits"])]


async def test_delegate_returns_an_immediate_message_reply(time_skipping_env, task_queue, a2a_server, a2a_worker):
    async with a2a_worker:
        result = await run_delegate(time_skipping_env, task_queue, delegate(a2a_server.url("echo"), "hello there"))
    assert (result.text, result.state, result.task_id, result.agent_name) == (
        "echo: hello there",
        "completed",
        None,
        "echo",
    )
    assert result.context_id


async def test_delegate_follows_a_working_task_until_it_completes(
    time_skipping_env, task_queue, a2a_server, a2a_worker
):
    async with a2a_worker:
        result = await run_delegate(time_skipping_env, task_queue, delegate(a2a_server.url("researcher"), "qubits"))
    assert (result.text, result.state, result.agent_name) == ("report on qubits", "completed", "researcher")
    assert result.task_id in a2a_server.tasks
    assert a2a_server.calls[("researcher", "SendMessage")] == 1
    assert a2a_server.calls[("researcher", "GetTask")] == 3


async def test_failed_remote_task_is_a_non_retryable_error_naming_the_reason(
    time_skipping_env, task_queue, a2a_server, a2a_worker
):
    async with a2a_worker:
        with pytest.raises(WorkflowFailureError) as caught:
            await run_delegate(time_skipping_env, task_queue, delegate(a2a_server.url("broken")))
    activity_error = caught.value.cause
    assert isinstance(activity_error, ActivityError)
    cause = activity_error.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == a2a_contract.TASK_ERROR and cause.non_retryable
    assert "remote agent 'broken' ended task" in cause.message
    assert "failed: the upstream index is offline" in cause.message
    assert a2a_server.calls[("broken", "SendMessage")] == 1


async def test_a_url_no_http_client_can_open_is_a_final_error_naming_it(time_skipping_env, task_queue, a2a_worker):
    async with a2a_worker:
        with pytest.raises(WorkflowFailureError) as caught:
            await run_delegate(time_skipping_env, task_queue, delegate("http://\u3002.example/agent"))
    cause = caught.value.cause.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == a2a_contract.REQUEST_ERROR and cause.non_retryable
    assert "is not a URL an HTTP client can open (Invalid IDNA hostname" in cause.message
    assert "fix the agent's `url`" in cause.message


async def test_delegate_is_retried_while_the_agent_is_down(time_skipping_env, task_queue, a2a_worker):
    port = free_port()
    server = A2AServer(roster(), port=port)
    async with a2a_worker:
        handle = await time_skipping_env.client.start_workflow(
            DelegateWorkflow.run,
            delegate(server.url("echo"), "are you up?"),
            id=f"down-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        first_failure = await _first_activity_failure(handle)
        async with serving(server.app(), port):
            result = await handle.result()
    assert "A2A agent card: cannot reach" in first_failure and "ConnectError" in first_failure
    assert result.text == "echo: are you up?"


async def test_a_retry_after_a_failed_poll_follows_the_same_remote_task(
    time_skipping_env, task_queue, a2a_server, a2a_worker
):
    async with a2a_worker:
        result = await run_delegate(time_skipping_env, task_queue, delegate(a2a_server.url("hiccup"), "qubits"))
    assert (result.text, result.task_id) == ("report on qubits", next(iter(a2a_server.tasks)))
    assert a2a_server.calls[("hiccup", "SendMessage")] == 1
    assert a2a_server.calls[("hiccup", "GetTask")] == 3


async def test_a_busy_agent_is_asked_again_after_its_retry_after(time_skipping_env, task_queue, a2a_server, a2a_worker):
    async with a2a_worker:
        result = await run_delegate(time_skipping_env, task_queue, delegate(a2a_server.url("busy"), "hello"))
    assert result.text == "echo: hello"
    assert a2a_server.calls[("busy", "SendMessage")] == 2


async def test_delegate_speaks_a2a_0_3_to_an_agent_with_a_legacy_card(
    time_skipping_env, task_queue, a2a_server, a2a_worker
):
    async with a2a_worker:
        result = await run_delegate(time_skipping_env, task_queue, delegate(a2a_server.url("legacy"), "history of A2A"))
    assert (result.text, result.state, result.agent_name) == ("report on history of A2A", "completed", "legacy")
    assert a2a_server.calls[("legacy", "message/send")] == 1
    assert a2a_server.calls[("legacy", "tasks/get")] == 2


async def _first_activity_failure(handle) -> str:
    """The message of the activity's first failed attempt, read from the pending activity."""
    while True:
        description = await handle.describe()
        pending = description.raw_description.pending_activities
        if pending and pending[0].HasField("last_failure"):
            return pending[0].last_failure.message
        await asyncio.sleep(0.05)


def test_the_error_types_the_workflow_retries_by_are_the_activity_error_class_names():
    from stalwart.activities.a2a import errors
    from stalwart.contracts import a2a

    assert errors.A2AUnavailableError.__name__ == a2a.UNAVAILABLE_ERROR
    assert errors.A2AProtocolError.__name__ == a2a.PROTOCOL_ERROR
    assert errors.A2ARequestError.__name__ == a2a.REQUEST_ERROR
    assert errors.A2ATaskError.__name__ == a2a.TASK_ERROR
