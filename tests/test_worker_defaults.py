"""Worker options `build_worker` sets unless told otherwise (`WORKER_DEFAULTS`)."""

from __future__ import annotations

from stalwart.workers.worker import build_worker


def test_a_worker_passes_a_workflow_tasks_payloads_through_storage_one_at_a_time(time_skipping_env):
    """The SDK's default starts a task for each payload of every activation and completion (bench/README.md)."""
    worker = build_worker(time_skipping_env.client, task_queue="payloads")
    assert worker.config()["max_workflow_task_external_storage_concurrency"] == 1


def test_a_worker_given_its_own_storage_concurrency_keeps_it(time_skipping_env):
    worker = build_worker(
        time_skipping_env.client, task_queue="own-payloads", max_workflow_task_external_storage_concurrency=4
    )
    assert worker.config()["max_workflow_task_external_storage_concurrency"] == 4
