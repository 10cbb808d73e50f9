"""Whether a worker polls a task queue: a live query needs one, and a dead one is still listed a while.

The server lists a worker's poller for minutes after the worker is gone, so a command that asked a run
right after its worker stopped waited out its whole query timeout before reading the run's history.
A worker that stops cleanly says so in its last heartbeat (servers that keep worker heartbeats list
them): a poller whose worker said it was shutting down, and which has not polled since, is not counted.
A worker that died without a word is still counted until the server drops its poller, and so is one whose
heartbeat from before it stopped (sent as it starts, and each minute) reached the server after the one saying it
stopped (the server keeps the latest it receives), or whose word never reached it: the SDK sends it once, in its
ShutdownWorker call, and does not retry that call, so a connection closing under it loses it (the server closes
each connection about every 5 minutes; the worker logs `shutdown_worker rpc errored during worker shutdown`).
Sending it again ourselves would need the worker's instance key, which the Python SDK does not give.
In each case the command only takes the slow path.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio.api.enums.v1 import TaskQueueType, WorkerStatus
from temporalio.api.taskqueue.v1 import PollerInfo, TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, ListWorkersRequest
from temporalio.service import RPCError, WorkflowService

_STOPPED = (WorkerStatus.WORKER_STATUS_SHUTTING_DOWN, WorkerStatus.WORKER_STATUS_SHUTDOWN)


async def workers_polling(service: WorkflowService, namespace: str, task_queue: str) -> bool | None:
    """Whether any live worker polls `task_queue` for workflow tasks, or None when the server does not say."""
    try:
        described = await service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
    except RPCError:
        return None
    if not described.pollers:
        return False
    stopped = await stopped_workers(service, namespace, task_queue)
    return not all(_of_a_stopped_worker(poller, stopped) for poller in described.pollers)


async def stopped_workers(service: WorkflowService, namespace: str, task_queue: str) -> dict[str, datetime]:
    """When each worker identity on `task_queue` said it was shutting down, for the identities none of whose
    workers still runs (one process may run several); empty when the server keeps no worker heartbeats."""
    if "'" in task_queue:  # the query language has no escape the server documents: know nothing rather than guess
        return {}
    try:
        listed = await service.list_workers(
            ListWorkersRequest(namespace=namespace, query=f"TaskQueue = '{task_queue}'", page_size=1000)
        )
    except RPCError:
        return {}
    running: set[str] = set()
    stopped: dict[str, datetime] = {}
    for info in listed.workers_info:
        beat = info.worker_heartbeat
        if beat.status not in _STOPPED or not beat.HasField("heartbeat_time"):
            running.add(beat.worker_identity)
            continue
        said = beat.heartbeat_time.ToDatetime(tzinfo=UTC)
        stopped[beat.worker_identity] = max(said, stopped.get(beat.worker_identity, said))
    return {identity: said for identity, said in stopped.items() if identity not in running}


def _of_a_stopped_worker(poller: PollerInfo, stopped: dict[str, datetime]) -> bool:
    """Whether `poller` last polled before its worker said it was shutting down: a worker started since under the
    same identity (the same process), or one that sends no heartbeats, polls after that and counts."""
    said = stopped.get(poller.identity)
    return said is not None and poller.last_access_time.ToDatetime(tzinfo=UTC) <= said
