"""Every run that waits for a person is in the inbox, however many wait: one left out would be the oldest, the first
its approval timeout rejects unseen (the CLI listed 20, the HTTP API 50)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import pytest
from serve_agents import gated_calculator

from stalwart.client.api import AWAITING_APPROVAL, StalwartClient
from stalwart.contracts.agent import AgentSpec

from support.serve_api import Served

pytestmark = pytest.mark.slow

WAITING = 55
"""More runs than either listing used to show."""


async def _waiting_runs(stalwart: StalwartClient, opened: list[str]) -> set[str]:
    """`WAITING` runs of an agent of their own, each waiting for a decision, once the server lists them all so."""
    agent = AgentSpec.model_validate({**gated_calculator(), "name": f"gated-{uuid.uuid4().hex[:6]}"})
    handles = await asyncio.gather(*(stalwart.start(agent, "What is 17*23+4?") for _ in range(WAITING)))
    ids = {handle.run_id for handle in handles}
    opened.extend(ids)
    query = f'{AWAITING_APPROVAL} AND AgentName = "{agent.name}"'
    while len(await stalwart.list(query, limit=None)) < WAITING:
        await asyncio.sleep(0.1)
    return ids


async def test_the_inbox_lists_every_run_waiting_for_a_decision(
    server: Served, stalwart_client: StalwartClient, dev_env, opened
):
    ids = await _waiting_runs(stalwart_client, opened)
    listed = await stalwart_client.awaiting_approval()
    async with server.client() as http:
        inbox = (await http.get("/api/approvals")).json()
        first_two = (await http.get("/api/approvals", params={"limit": 2})).json()
    pending = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "stalwart.client.cli", "pending", "--address", dev_env.address],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert ids <= {run_id for run_id, calls in listed if calls}
    assert ids <= {run["run_id"] for run in inbox["runs"]} and inbox["more"] is False
    assert len(first_two["runs"]) == 2 and first_two["more"] is True
    assert pending.returncode == 0, pending.stderr
    assert all(run_id in pending.stdout for run_id in ids)
