"""A worker keeps its provider SDK clients across model turns and closes them when it stops."""

from __future__ import annotations

import openai
from flavors import Flavor, agent_for, start_run

from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.providers.clients import SdkClients
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Reply


async def test_model_turns_of_one_worker_share_one_sdk_client(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(calls=(Call("calculator", {"expression": "2+3"}),)), Reply(text="5"))
    models = ModelActivities()
    async with build_worker(time_skipping_env.client, task_queue=task_queue, models=models):
        result = await (await start_run(time_skipping_env, task_queue, agent_for(flavor, script), "2+3?")).result()
        clients = list(models.clients)
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", "5", 2)
    assert len(clients) == 1


async def test_stopping_the_worker_closes_its_sdk_clients(time_skipping_env, task_queue, wire, flavor: Flavor):
    script = wire.script(Reply(text="hello"))
    models = ModelActivities()
    async with build_worker(time_skipping_env.client, task_queue=task_queue, models=models):
        await (await start_run(time_skipping_env, task_queue, agent_for(flavor, script), "hi")).result()
        [client] = list(models.clients)
        assert not client.is_closed()  # type: ignore[attr-defined]
    assert client.is_closed()  # type: ignore[attr-defined]
    assert list(models.clients) == []


def test_a_different_key_or_base_url_gets_its_own_client():
    clients = SdkClients()
    first = clients.get(openai.AsyncOpenAI, api_key="sk-a", base_url="http://127.0.0.1:1/v1", read_seconds=60)
    assert clients.get(openai.AsyncOpenAI, api_key="sk-a", base_url="http://127.0.0.1:1/v1", read_seconds=60) is first
    assert (
        clients.get(openai.AsyncOpenAI, api_key="sk-b", base_url="http://127.0.0.1:1/v1", read_seconds=60) is not first
    )
    assert (
        clients.get(openai.AsyncOpenAI, api_key="sk-a", base_url="http://127.0.0.1:2/v1", read_seconds=60) is not first
    )
    assert len(list(clients)) == 3


def test_sdk_clients_never_retry_on_their_own():
    client = SdkClients().get(openai.AsyncOpenAI, api_key="sk-a", base_url="http://127.0.0.1:1/v1", read_seconds=60)
    assert client.max_retries == 0
