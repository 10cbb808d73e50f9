"""Issue 43, item 6: an A2A agent whose host does not resolve, or where nothing listens, is retried saying why.

The delegation is still retried (the agent may be back in a moment), but each failed attempt names the cause and
what to check, where before it said only "cannot reach ... (ConnectError: ...)".
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from a2a_requests import delegate
from a2a_workflows import DelegateWorkflow

from stalwart.workers.dev_server import free_port


async def _first_failure(env, task_queue: str, url: str) -> str:
    """The message of the delegation's first failed attempt, read from its pending activity."""
    handle = await env.client.start_workflow(
        DelegateWorkflow.run, delegate(url, "are you up?"), id=f"gone-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    try:
        while True:
            pending = (await handle.describe()).raw_description.pending_activities
            if pending and pending[0].HasField("last_failure"):
                return pending[0].last_failure.message
            await asyncio.sleep(0.05)
    finally:
        await handle.terminate(reason="test over")


@pytest.mark.parametrize(
    ("host", "said"),
    [
        ("no-such-host.invalid", "cannot resolve host 'no-such-host.invalid'"),
        ("127.0.0.1", "nothing accepts connections at 127.0.0.1:{port} (connection refused)"),
    ],
    ids=["no-such-host", "nothing-listens"],
)
async def test_an_unreachable_a2a_agent_is_retried_saying_why(time_skipping_env, task_queue, a2a_worker, host, said):
    port = free_port()
    async with a2a_worker:
        failed = await _first_failure(time_skipping_env, task_queue, f"http://{host}:{port}/echo")
    print(f"\n{failed}")
    assert said.format(port=port) in failed
    assert "check the sub-agent's `url` in the agent file" in failed
