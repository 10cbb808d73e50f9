"""How a delegation ends in the less common cases, run in an ActivityEnvironment against the live A2A server.

Each test looks at the error Temporal would receive (its type decides the
retry, its message becomes `Delegation failed: ...`) or at what the remote
agent saw.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

import pytest
from a2a_requests import delegate
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from stalwart.activities.a2a.activities import a2a_delegate, a2a_describe
from stalwart.contracts import a2a as a2a_contract
from stalwart.contracts.a2a import A2ADelegateRequest, A2ADescribeRequest


async def failure_of(request: A2ADelegateRequest) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(a2a_delegate, request)
    return caught.value


async def test_http_429_is_retried_after_the_agents_retry_after(a2a_server):
    error = await failure_of(delegate(a2a_server.url("busy")))
    assert (error.type, error.non_retryable, error.next_retry_delay) == (
        a2a_contract.UNAVAILABLE_ERROR,
        False,
        timedelta(seconds=7),
    )
    assert "answered HTTP 429" in error.message


async def test_a_url_without_an_agent_card_fails_for_good_naming_the_urls_tried(a2a_server):
    error = await failure_of(delegate(a2a_server.url("nobody")))
    assert (error.type, error.non_retryable) == (a2a_contract.REQUEST_ERROR, True)
    assert f"no A2A agent card at {a2a_server.url('nobody')}/.well-known/agent-card.json" in error.message
    assert "check the agent's URL" in error.message


async def test_input_required_returns_the_agents_question_and_the_ids_to_answer_with(a2a_server):
    result = await ActivityEnvironment().run(a2a_delegate, delegate(a2a_server.url("asker"), "revenue report"))
    assert (result.state, result.text) == ("input-required", "Which year do you mean?")
    answer = delegate(a2a_server.url("asker"), "2025", context_id=result.context_id, task_id=result.task_id)
    followed_up = await ActivityEnvironment().run(a2a_delegate, answer)
    assert (followed_up.state, followed_up.task_id) == ("completed", result.task_id)
    assert followed_up.text == "answer for 'Which year do you mean?': 2025"


async def test_a_retry_follows_the_task_the_previous_attempt_started(a2a_server):
    started = await a2a_server_task(a2a_server, "researcher")
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=2, heartbeat_details=[started])
    result = await env.run(a2a_delegate, delegate(a2a_server.url("researcher"), "qubits"))
    assert (result.task_id, result.text) == (started, "report on an earlier ask")
    assert a2a_server.calls[("researcher", "SendMessage")] == 1


async def test_the_message_id_is_the_idempotency_key(a2a_server):
    request = delegate(a2a_server.url("echo"))
    await ActivityEnvironment().run(a2a_delegate, request)
    assert a2a_server.message_ids == [request.idempotency_key]


async def test_cancelling_the_delegation_cancels_the_remote_task(a2a_server):
    env = ActivityEnvironment()
    heartbeats: list[tuple] = []
    env.on_heartbeat = lambda *details: heartbeats.append(details)
    running = asyncio.ensure_future(env.run(a2a_delegate, delegate(a2a_server.url("endless"))))
    while not any(details for details in heartbeats):
        await asyncio.sleep(0.01)
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert a2a_server.canceled == [heartbeats[-1][0]]


async def test_the_bearer_token_is_read_from_the_workers_environment(a2a_server, monkeypatch):
    monkeypatch.setenv("PRIVATE_AGENT_TOKEN", "s3cret")
    monkeypatch.setenv("STALWART_ALLOWED_ENV", "PRIVATE_AGENT_TOKEN")  # workers read only the variables they allow
    result = await ActivityEnvironment().run(
        a2a_delegate, delegate(a2a_server.url("private"), "hi", auth_token_env="PRIVATE_AGENT_TOKEN")
    )
    assert result.text == "echo: hi"


async def test_an_agent_refusing_the_request_names_the_token_setting(a2a_server):
    error = await failure_of(delegate(a2a_server.url("private")))
    assert (error.type, error.non_retryable) == (a2a_contract.REQUEST_ERROR, True)
    assert "HTTP 401" in error.message and "set auth_token_env" in error.message


async def test_describe_finds_a_card_at_the_legacy_agent_json_path(a2a_server):
    card = await ActivityEnvironment().run(a2a_describe, A2ADescribeRequest(url=a2a_server.url("legacy")))
    assert card.card_url == f"{a2a_server.url('legacy')}/.well-known/agent.json"
    assert (card.name, card.protocol_version) == ("legacy", "0.3.0")


async def a2a_server_task(server, agent: str) -> str:
    """Start a task on `agent` as an earlier attempt would have, and return its id."""
    import httpx

    payload = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "an earlier ask"}]}},
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{server.url(agent)}/rpc", json=payload, headers={"A2A-Version": "1.0"})
    return response.json()["result"]["task"]["id"]
