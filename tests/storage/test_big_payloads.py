"""Payloads over Temporal's 2 MiB limit through a real Temporal server, stored in a directory or in S3 (moto)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aioboto3
import pytest
from moto.server import ThreadedMotoServer
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.aws.s3driver import S3StorageDriverClient
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from stalwart.activities.storage import (
    LOCAL_BUCKET,
    ObjectStore,
    PrefixedObjectClient,
    StorageConfig,
    object_client,
    with_external_storage,
)
from stalwart.contracts.converter import DATA_CONVERTER

from support.big_payloads import BigPayloadActivities, BigPayloadWorkflow

SIZE = 3 * 1024 * 1024
BUCKET = "stalwart-test"


async def run_big_payload_workflow(client: Client) -> tuple[int, BigPayloadActivities, int]:
    """Run the workflow once; return its result, the activities (with their call counts) and the history's size."""
    activities = BigPayloadActivities()
    task_queue = f"big-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[BigPayloadWorkflow],
        activities=[activities.make_text, activities.measure],
    ):
        handle = await client.start_workflow(
            BigPayloadWorkflow.run, SIZE, id=f"big-payload-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        result = await handle.result()
    history = await handle.fetch_history()
    return result, activities, sum(event.ByteSize() for event in history.events)


def storage_client(server: Client, config: StorageConfig, objects: S3StorageDriverClient | None = None) -> Client:
    """A client of the same server whose converter stores large payloads; workers built on it do too."""
    return Client(
        server.service_client,
        namespace=server.namespace,
        data_converter=with_external_storage(DATA_CONVERTER, config, objects),
    )


async def test_a_3_mb_activity_result_and_input_complete_in_one_attempt_stored_in_a_local_directory(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
):
    config = StorageConfig(local_root=tmp_path)

    result, activities, history_bytes = await run_big_payload_workflow(storage_client(time_skipping_env.client, config))

    assert result == SIZE
    assert activities.calls == {"make_text": 1, "measure": 1}
    assert history_bytes < 100_000, "history holds references, not the payloads"
    stored = [p for p in (tmp_path / LOCAL_BUCKET).rglob("*") if p.is_file()]
    big = [p for p in stored if p.stat().st_size > SIZE]
    assert len(big) == 2, f"expected the activity's result and the next activity's input, found {stored}"
    assert all(not p.name.endswith(".tmp") for p in stored)


@pytest.mark.slow
async def test_without_storage_the_dev_server_refuses_a_3_mb_activity_result(dev_env):
    """The control for the next test: the time-skipping server does not enforce the 2 MiB limit, the dev server does."""
    # dev_env's own client may carry storage from the environment: this one has none.
    without_storage = Client(
        dev_env.client.service_client, namespace=dev_env.client.namespace, data_converter=DATA_CONVERTER
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await run_big_payload_workflow(without_storage)
    assert isinstance(failed.value.cause, ActivityError)


@pytest.mark.slow
async def test_a_3_mb_activity_result_and_input_pass_the_dev_servers_2_mib_limit_through_local_storage(
    dev_env, tmp_path: Path
):
    result, activities, history_bytes = await run_big_payload_workflow(
        storage_client(dev_env.client, StorageConfig(local_root=tmp_path))
    )

    assert result == SIZE
    assert activities.calls == {"make_text": 1, "measure": 1}
    assert history_bytes < 100_000
    assert len([p for p in (tmp_path / LOCAL_BUCKET).rglob("*") if p.is_file() and p.stat().st_size > SIZE]) == 2


@pytest.fixture
def moto_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A real S3-compatible HTTP server on a free local port, with dummy credentials in the environment."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # Keep a developer's own AWS files out of the test.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
async def s3_bucket(moto_endpoint: str) -> AsyncIterator[str]:
    async with aioboto3.Session().client("s3", endpoint_url=moto_endpoint) as s3:
        await s3.create_bucket(Bucket=BUCKET)
    yield BUCKET


async def list_objects(endpoint: str, bucket: str) -> dict[str, int]:
    async with aioboto3.Session().client("s3", endpoint_url=endpoint) as s3:
        listing = await s3.list_objects_v2(Bucket=bucket)
    return {item["Key"]: item["Size"] for item in listing.get("Contents", [])}


@pytest.mark.slow
async def test_a_3_mb_activity_result_and_input_complete_in_one_attempt_stored_in_s3_under_the_prefix(
    time_skipping_env: WorkflowEnvironment, moto_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STALWART_STORAGE", f"s3://{s3_bucket}/runs/e2e")
    monkeypatch.setenv("STALWART_S3_ENDPOINT_URL", moto_endpoint)
    config = StorageConfig.from_env()
    client = object_client(config)
    assert isinstance(client, PrefixedObjectClient)
    try:
        result, activities, history_bytes = await run_big_payload_workflow(
            storage_client(time_skipping_env.client, config, client)
        )

        store = ObjectStore.from_config(config, client)
        assert await store.get("run-1/transcript.jsonl") is None
        await store.put("run-1/transcript.jsonl", b'{"role": "user"}\n')
        assert await store.get("run-1/transcript.jsonl") == b'{"role": "user"}\n'
    finally:
        await client.aclose()

    assert result == SIZE
    assert activities.calls == {"make_text": 1, "measure": 1}
    assert history_bytes < 100_000, "history holds references, not the payloads"
    objects = await list_objects(moto_endpoint, s3_bucket)
    assert all(key.startswith("runs/e2e/") for key in objects), objects
    big = [key for key, size in objects.items() if key.startswith("runs/e2e/v0/") and size > SIZE]
    assert len(big) == 2, f"expected the activity's result and the next activity's input, found {objects}"
    assert objects["runs/e2e/transcripts/run-1/transcript.jsonl"] == len(b'{"role": "user"}\n')
