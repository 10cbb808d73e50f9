"""`stalwart show` soon after the run's worker was killed: the state, read from history, within seconds.

A killed worker stays listed as a poller for a while, and a query to a run it held went to its sticky queue: each
try waited out its timeout, and `show` answered after about 15 s. Now the worker keeps the server's wait for it
short (`STICKY_QUEUE_TIMEOUT`), and `show` tries twice, briefly, before reading the run's history. How long it took
is printed (about 2 s on a loaded machine); the tests check the mechanism, not the time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from stalwart.client.api import StalwartClient
from stalwart.client.reader import RunReader
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.worker import STICKY_QUEUE_TIMEOUT, build_worker


def test_a_worker_gives_up_its_sticky_queue_after_a_second(time_skipping_env):
    worker = build_worker(time_skipping_env.client, task_queue="sticky")
    assert worker.config()["sticky_queue_schedule_to_start_timeout"] == STICKY_QUEUE_TIMEOUT
    assert STICKY_QUEUE_TIMEOUT.total_seconds() <= 1


@pytest.mark.slow
async def test_show_after_the_worker_was_killed_reads_history_after_two_short_queries(dev_env, task_queue, monkeypatch):
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    command = [sys.executable, "-m", "stalwart.client.cli", "worker", "--address", dev_env.address]
    worker = subprocess.Popen([*command, "--task-queue", task_queue], stderr=subprocess.DEVNULL)
    try:
        session = await stalwart.start_session(AgentSpec(name="greeter", scripted=[ScriptedReply(text="Hello.")]))
        await session.send("Hi")  # the worker holds the session, waiting for its next message
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    reader = stalwart.get(session.run_id)
    tries: list[float] = []
    query = type(reader).query

    async def counted(self: RunReader, name: str, result_type: object, *, rpc_timeout: timedelta, **asked) -> object:
        tries.append(rpc_timeout.total_seconds())
        return await query(self, name, result_type, rpc_timeout=rpc_timeout, **asked)  # type: ignore[arg-type]

    monkeypatch.setattr(type(reader), "query", counted)
    began = time.monotonic()
    state = await reader.state()
    print(f"\nshow answered {time.monotonic() - began:.1f} s after its worker was killed, tries {tries}")
    assert (state.status, [step.content for step in state.steps]) == ("waiting", ["Hi", "Hello."])
    assert reader.offline is not None, "read from the run's history"
    assert tries == [1.0, 1.0]
