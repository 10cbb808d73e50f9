"""Fixtures of the A2A tests: a worker running the activities (the live A2A server, `a2a_server`, is in
tests/conftest.py)."""

from __future__ import annotations

import pytest
from a2a_workflows import DelegateWorkflow, DescribeWorkflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from stalwart.activities.a2a.activities import a2a_delegate, a2a_describe


@pytest.fixture
async def a2a_worker(time_skipping_env: WorkflowEnvironment, task_queue: str):
    """A worker with the A2A activities and the test workflows that schedule them."""
    return Worker(
        time_skipping_env.client,
        task_queue=task_queue,
        workflows=[DelegateWorkflow, DescribeWorkflow],
        activities=[a2a_delegate, a2a_describe],
    )
