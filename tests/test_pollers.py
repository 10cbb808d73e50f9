"""A live query needs a worker: one that stopped cleanly is not counted, though the server lists its poller a while.

Before, `stalwart show` of a run whose worker had just stopped waited out the whole query timeout (about 18 s)
before reading the run from its history, and `stalwart run` did not warn that no worker would take it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from test_cli import stalwart

from stalwart.client.connection import connect
from stalwart.client.pollers import stopped_workers, workers_polling
from stalwart.workers.worker import build_worker


async def _listed_pollers(dev_env, task_queue: str) -> dict[str, datetime]:
    """The identities the server lists as polling `task_queue`, with when each last polled."""
    described = await dev_env.client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=dev_env.client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return {poller.identity: poller.last_access_time.ToDatetime(tzinfo=UTC) for poller in described.pollers}


async def _young_client(dev_env) -> Client:
    """A connection of the test's own for its workers. The SDK sends the heartbeat saying a worker stops once, in
    its ShutdownWorker call, and does not retry it; the server closes each connection about every 5 minutes
    (`frontend.keepAliveMaxConnectionAge`), and the session's client is older: a stop that met the close was lost
    (`shutdown_worker rpc errored during worker shutdown: ... connection closed`) and the worker still counted."""
    return await connect(dev_env.address, from_config=False)


async def _polling_a_while(dev_env, task_queue: str) -> None:
    """Until the worker has polled, and a second more: the heartbeat a worker sends as it starts, still on its way
    when the worker stops, could land after the one saying it stopped and be taken as its last word (the server
    keeps the latest it receives). The next one is a minute away."""
    await _until_polled_after(dev_env, task_queue)
    await asyncio.sleep(1)


async def _until_polled_after(dev_env, task_queue: str, after: datetime = datetime.min.replace(tzinfo=UTC)) -> None:
    while not any(polled > after for polled in (await _listed_pollers(dev_env, task_queue)).values()):
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_a_worker_that_stopped_cleanly_is_not_counted_though_the_server_still_lists_its_poller(
    dev_env, task_queue
):
    service, namespace = dev_env.client.workflow_service, dev_env.client.namespace
    async with build_worker(await _young_client(dev_env), task_queue=task_queue):
        await _polling_a_while(dev_env, task_queue)
        assert await workers_polling(service, namespace, task_queue) is True
        assert await stopped_workers(service, namespace, task_queue) == {}

    listed = await _listed_pollers(dev_env, task_queue)
    assert listed, "the server still lists the stopped worker's poller"
    assert list(await stopped_workers(service, namespace, task_queue)) == list(listed)
    assert await workers_polling(service, namespace, task_queue) is False


@pytest.mark.slow
async def test_a_worker_started_again_under_a_stopped_workers_identity_is_counted(dev_env, task_queue):
    """Two workers of one process share an identity (`pid@host`): the second is live whatever the first said."""
    service, namespace = dev_env.client.workflow_service, dev_env.client.namespace
    client = await _young_client(dev_env)
    async with build_worker(client, task_queue=task_queue):
        await _polling_a_while(dev_env, task_queue)
    assert await workers_polling(service, namespace, task_queue) is False
    [said_it_stopped] = (await stopped_workers(service, namespace, task_queue)).values()

    async with build_worker(client, task_queue=task_queue):
        await _until_polled_after(dev_env, task_queue, said_it_stopped)
        assert await workers_polling(service, namespace, task_queue) is True


@pytest.mark.slow
async def test_a_session_started_after_its_worker_stopped_is_told_that_no_worker_is_polling(
    dev_env, task_queue, tmp_path
):
    """What a user reads: the command warns that nothing will take the session, not silence while the server still
    lists the stopped worker's poller."""
    agent = tmp_path / "chatter.toml"
    agent.write_text('name = "chatter"\nmodel = "scripted"\n\n[[scripted]]\ntext = "hi"\n')
    async with build_worker(await _young_client(dev_env), task_queue=task_queue):
        await _polling_a_while(dev_env, task_queue)
    assert await _listed_pollers(dev_env, task_queue), "the server still lists the stopped worker's poller"

    session = f"after-{task_queue}"
    args = ("session", "start", str(agent), "--id", session, "--task-queue", task_queue)
    started = await asyncio.to_thread(stalwart, *args, address=dev_env.address)

    assert started.returncode == 0, started.stderr
    assert f"no worker is polling task queue {task_queue!r}" in started.stderr
