"""A Stalwart agent served over A2A: its card comes from the spec, a message starts a durable run, the task follows it.

The caller is Stalwart's own A2A client (the `a2a_delegate` activity) or raw
JSON-RPC for the 0.3 shapes; the agent runs on a real worker on the
time-skipping server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from a2a_requests import delegate
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from stalwart.activities.a2a.activities import a2a_delegate, a2a_describe
from stalwart.client.a2a_server import A2AAgentServer
from stalwart.client.api import StalwartClient
from stalwart.contracts import a2a as a2a_contract
from stalwart.contracts.a2a import A2ADescribeRequest
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.dev_server import free_port
from stalwart.workers.worker import build_worker

from support.a2a_http import serving

EXPLAINER = AgentSpec(
    name="explainer",
    description="Explains physics in one sentence.",
    tools=["calculator"],
    scripted=[ScriptedReply(text="Qubits are two-level quantum systems.")],
)
SILENT = AgentSpec(name="silent", description="Has no scripted replies, so its run fails.")


@pytest.fixture
async def served(time_skipping_env, task_queue, monkeypatch) -> AsyncIterator[dict[str, str]]:
    """The two agents served over A2A, with a worker running their runs; yields their URLs."""
    monkeypatch.delenv("DEBUG_MOCK_RESPONSES", raising=False)
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    urls: dict[str, str] = {}
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        explainer_port, silent_port = free_port(), free_port()
        urls = {"explainer": f"http://127.0.0.1:{explainer_port}/", "silent": f"http://127.0.0.1:{silent_port}/"}
        explainer = A2AAgentServer(stalwart, EXPLAINER, public_url=urls["explainer"])
        silent = A2AAgentServer(stalwart, SILENT, public_url=urls["silent"])
        async with serving(explainer.app(), explainer_port), serving(silent.app(), silent_port):
            yield urls


async def test_the_card_is_built_from_the_agent_spec(served):
    card = await ActivityEnvironment().run(a2a_describe, A2ADescribeRequest(url=served["explainer"]))
    assert (card.name, card.description, card.protocol_version, card.endpoint) == (
        "explainer",
        "Explains physics in one sentence.",
        "1.0",
        served["explainer"],
    )
    assert [(s.id, s.tags) for s in card.skills] == [("explainer", ["calculator"])]


async def test_a_delegation_to_a_served_agent_returns_the_answer_of_its_run(served, time_skipping_env):
    result = await ActivityEnvironment().run(a2a_delegate, delegate(served["explainer"]))
    assert (result.state, result.text, result.agent_name) == (
        "completed",
        "Qubits are two-level quantum systems.",
        "explainer",
    )
    run = await time_skipping_env.client.get_workflow_handle(result.task_id).describe()
    assert run.workflow_type == "AgentWorkflow"


async def test_a_run_that_ends_in_error_is_a_failed_task_naming_the_error(served):
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(a2a_delegate, delegate(served["silent"]))
    assert (caught.value.type, caught.value.non_retryable) == (a2a_contract.TASK_ERROR, True)
    assert "remote agent 'silent' ended task" in caught.value.message
    assert "the scripted model has no reply for model call 1" in caught.value.message


async def test_resending_a_message_follows_the_run_it_started(served, time_skipping_env):
    key = f"msg-{uuid.uuid4().hex}"
    first = await ActivityEnvironment().run(a2a_delegate, delegate(served["explainer"], key=key))
    started = await time_skipping_env.client.get_workflow_handle(first.task_id).describe()
    again = await ActivityEnvironment().run(a2a_delegate, delegate(served["explainer"], key=key))
    latest = await time_skipping_env.client.get_workflow_handle(again.task_id).describe()
    assert again.task_id == first.task_id
    assert latest.run_id == started.run_id  # the resend started no second run under the same workflow id
    assert (again.state, again.text) == ("completed", "Qubits are two-level quantum systems.")


async def _rpc(server: A2AAgentServer, method: str, params: dict) -> dict:
    transport = httpx.ASGITransport(app=server.app())
    async with httpx.AsyncClient(transport=transport, base_url="http://a2a.test") as http:
        response = await http.post("/", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


def _message(text: str = "What is a qubit?") -> dict:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


async def test_cancelling_a_working_task_answers_with_the_canceled_task(time_skipping_env):
    # No worker listens on this queue, so the run stays working until it is cancelled.
    stalwart = StalwartClient(time_skipping_env.client, task_queue=f"nobody-{uuid.uuid4().hex}")
    server = A2AAgentServer(stalwart, EXPLAINER, public_url="http://a2a.test/")
    sent = await _rpc(server, "SendMessage", {"message": _message(), "configuration": {"returnImmediately": True}})
    task_id = sent["result"]["task"]["id"]
    assert sent["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    canceled = await _rpc(server, "CancelTask", {"id": task_id})
    assert (canceled["result"]["id"], canceled["result"]["status"]["state"]) == (task_id, "TASK_STATE_CANCELED")
    run = time_skipping_env.client.get_workflow_handle(task_id)
    history = await run.fetch_history()  # the server asked Temporal to cancel the run, not just answered "canceled"
    assert any(e.HasField("workflow_execution_cancel_requested_event_attributes") for e in history.events)
    await run.terminate("test cleanup")


async def test_temporal_failing_to_start_a_run_is_a_json_rpc_internal_error(time_skipping_env, monkeypatch):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=f"nobody-{uuid.uuid4().hex}")

    async def unavailable(*args: object, **kwargs: object) -> None:
        raise RPCError("the frontend is down", RPCStatusCode.UNAVAILABLE, b"")

    monkeypatch.setattr(stalwart, "start", unavailable)
    server = A2AAgentServer(stalwart, EXPLAINER, public_url="http://a2a.test/")
    body = await _rpc(server, "SendMessage", {"message": _message()})
    assert body["error"]["code"] == -32603
    assert "Temporal did not answer (the frontend is down)" in body["error"]["message"]


async def test_an_a2a_0_3_client_gets_the_answer_of_a_blocking_message_send(served):
    payload = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": uuid.uuid4().hex,
                "contextId": "ctx-7",
                "role": "user",
                "parts": [{"kind": "text", "text": "What is a qubit?"}],
            },
            "configuration": {"blocking": True},
        },
    }
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{served['explainer']}.well-known/agent.json")).json()
        body = (await http.post(card["url"], json=payload)).json()
    task = body["result"]
    assert (card["protocolVersion"], body["id"], task["kind"], task["contextId"], task["status"]["state"]) == (
        "0.3.0",
        "r1",
        "task",
        "ctx-7",
        "completed",
    )
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "Qubits are two-level quantum systems."}]


async def test_an_unknown_task_is_a_task_not_found_error(served):
    payload = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "a2a-explainer-nope"}}
    async with httpx.AsyncClient() as http:
        body = (await http.post(served["explainer"], json=payload, headers={"A2A-Version": "1.0"})).json()
    assert body["error"]["code"] == -32001


async def test_new_user_trips_get_task_after_a_confirmed_cancel_answers_canceled_not_working(time_skipping_env):
    """Issue 11, defect 12: once CancelTask answered CANCELED, GetTask must not say WORKING while the run winds
    down. No worker listens here, so the run stays RUNNING with its cancel requested for as long as the test looks;
    a second server (another replica, no memory of the cancel) reads the request from the run's history."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=f"nobody-{uuid.uuid4().hex}")
    server = A2AAgentServer(stalwart, EXPLAINER, public_url="http://a2a.test/")
    replica = A2AAgentServer(stalwart, EXPLAINER, public_url="http://a2a.test/")
    sent = await _rpc(server, "SendMessage", {"message": _message(), "configuration": {"returnImmediately": True}})
    task_id = sent["result"]["task"]["id"]
    await _rpc(server, "CancelTask", {"id": task_id})
    run = time_skipping_env.client.get_workflow_handle(task_id)
    assert (await run.describe()).status.name == "RUNNING"  # still winding down: no worker took the cancel yet
    for answering in (server, replica):
        got = await _rpc(answering, "GetTask", {"id": task_id})
        assert got["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    await run.terminate("test cleanup")


def test_python_m_a2a_server_says_a_setting_it_cannot_use_in_one_line():
    """`python -m stalwart.client.a2a_server` printed a traceback for no Temporal server, a malformed key or an OTLP
    endpoint that is not a URL; `stalwart` says each in one line."""
    import os
    import subprocess
    import sys

    from support.repo_paths import REPO

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "STALWART_ENCRYPTION"))}
    for extra, said in [
        ({}, "cannot reach Temporal at localhost:1"),
        ({"STALWART_ENCRYPTION_KEYS": "k1:abc"}, "the key of 'k1' is not base64"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "is not a URL"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "stalwart.client.a2a_server", str(REPO / "agents" / "calculator.toml")],
            env={**clean, "TEMPORAL_ADDRESS": "localhost:1", "HOME": "/nonexistent", **extra},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("error: ") and said in done.stderr, done.stderr
