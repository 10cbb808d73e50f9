"""Stalwart's A2A server answers a run with typed output as a data part, in both protocol versions."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from stalwart.client.a2a_server import A2AAgentServer
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, OutputSpec, ScriptedReply
from stalwart.workers.dev_server import free_port
from stalwart.workers.worker import build_worker

from support.a2a_http import serving

REFUND = {"order_id": "7", "amount": 12.5}


def refunder(*texts: str, output: OutputSpec) -> AgentSpec:
    return AgentSpec(name="refunder", scripted=[ScriptedReply(text=text) for text in texts], output=output)


@pytest.fixture
async def serve(time_skipping_env, task_queue, monkeypatch):
    """`async with serve(agent) as url:` the agent served over A2A, with a worker running its runs."""
    monkeypatch.delenv("DEBUG_MOCK_RESPONSES", raising=False)
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)

    @asynccontextmanager
    async def served(agent: AgentSpec) -> AsyncIterator[str]:
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        app = A2AAgentServer(stalwart, agent, public_url=url).app()
        async with build_worker(time_skipping_env.client, task_queue=task_queue), serving(app, port):
            yield url

    return served


async def send(url: str, method: str, message: dict[str, Any]) -> dict[str, Any]:
    payload = {"jsonrpc": "2.0", "id": "r1", "method": method, "params": {"message": message}}
    async with httpx.AsyncClient() as http:
        return (await http.post(url, json=payload)).json()["result"]


async def test_a_1_0_client_gets_the_output_as_a_data_part(serve):
    agent = refunder('{"order_id": "7", "amount": 12.5}', output=OutputSpec(schema={"type": "object"}))
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "refund order 7"}]}
    async with serve(agent) as url:
        task = (await send(url, "SendMessage", message))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"data": REFUND, "mediaType": "application/json"}]


async def test_a_0_3_client_gets_an_output_that_is_not_an_object_wrapped_in_a_data_part(serve):
    agent = refunder("[1, 2]", output=OutputSpec.for_type(list[int]))
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": "go"}],
    }
    async with serve(agent) as url:
        task = await send(url, "message/send", message)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "data", "data": {"result": [1, 2]}}]


async def test_a_null_output_is_sent_as_data_not_as_the_text_null(serve):
    agent = refunder("null", output=OutputSpec.for_type(int | None))
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "how many?"}]}
    async with serve(agent) as url:
        task = (await send(url, "SendMessage", message))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"data": None, "mediaType": "application/json"}]
