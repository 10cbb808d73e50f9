"""`StalwartPlugin` in a user's own Temporal client and worker, next to the user's own workflows."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from stalwart import StalwartClient, StalwartPlugin, load_agent

from support.approvals import until_pending
from support.repo_paths import AGENTS_DIR
from support.users_workflow import UsersOwnWorkflow, shout


def _plain_client(env: WorkflowEnvironment, **options: object) -> Client:
    """A client as a user builds it: the SDK's default data converter, unless the plugin changes it."""
    return Client(env.client.service_client, namespace=env.client.namespace, **options)  # type: ignore[arg-type]


async def _run_example_agent(client: Client, task_queue: str) -> None:
    stalwart = StalwartClient(client, task_queue=task_queue)
    spec = load_agent(AGENTS_DIR / "ops_assistant.toml").model_copy(update={"model": "scripted"})
    handle = await stalwart.start(spec, "How much longer does production keep run histories than staging?")
    [waiting] = await until_pending(handle)
    assert waiting.tool_name == "add_note"
    await handle.approve(waiting.call_id)
    result = await handle.result()
    assert result.stop_reason == "done", result.error
    used = {step.tool_name for step in result.steps if step.role == "tool"}
    assert {"search_notes", "calculator", "reviewer", "add_note"} <= used


@pytest.mark.slow
async def test_a_users_own_worker_runs_the_example_agent_through_the_plugin_on_its_client(
    time_skipping_env: WorkflowEnvironment, tmp_path, monkeypatch
):
    monkeypatch.setenv("NOTES_FILE", str(tmp_path / "notes.json"))
    client = _plain_client(time_skipping_env, plugins=[StalwartPlugin()])
    task_queue = f"users-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=task_queue, workflows=[UsersOwnWorkflow], activities=[shout]):
        await _run_example_agent(client, task_queue)
        own = await client.execute_workflow(UsersOwnWorkflow.run, "hi", id=f"own-{uuid.uuid4()}", task_queue=task_queue)
        assert own == "HI"


async def test_the_plugin_given_to_the_worker_alone_still_carries_stalwarts_payloads(
    time_skipping_env: WorkflowEnvironment, task_queue: str
):
    worker = Worker(_plain_client(time_skipping_env), task_queue=task_queue, plugins=[StalwartPlugin()])
    async with worker:
        stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
        result = await (await stalwart.start(AGENTS_DIR / "calculator.toml", "What is 2**10?")).result()
    assert result.stop_reason == "done"


def test_the_plugin_applied_twice_says_where_to_pass_it(time_skipping_env: WorkflowEnvironment, task_queue: str):
    client = _plain_client(time_skipping_env, plugins=[StalwartPlugin()])
    with pytest.raises(ValueError, match="not both"):
        Worker(client, task_queue=task_queue, plugins=[StalwartPlugin()])


def test_the_plugin_keeps_a_users_payload_codec(time_skipping_env: WorkflowEnvironment):
    from temporalio.converter import DataConverter, PayloadCodec

    class Marker(PayloadCodec):
        async def encode(self, payloads):  # type: ignore[no-untyped-def]
            return list(payloads)

        async def decode(self, payloads):  # type: ignore[no-untyped-def]
            return list(payloads)

    codec = Marker()
    client = _plain_client(
        time_skipping_env, data_converter=DataConverter(payload_codec=codec), plugins=[StalwartPlugin()]
    )
    assert client.data_converter.payload_codec is codec
    assert "Pydantic" in client.data_converter.payload_converter_class.__name__
