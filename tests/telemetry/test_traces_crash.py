"""A worker killed mid-run: the run's trace, exported over OTLP by the real `stalwart worker` processes, is still
one tree with every span once.

The first worker is killed (SIGKILL) while a tool call is in flight, after the spans of what it finished reached
the collector (OTEL_BSP_SCHEDULE_DELAY is short; a killed process loses what its batch has not sent yet). The
second worker replays the history: the spans the first one ended are not exported again, the ones it left open
(the run's, the interrupted tool call's) keep their ids and end once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from otlp_collector import Collector
from span_trees import signature, spans_of_trace, tree

from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall

HERE = Path(__file__).resolve().parent
VALUES = ["r1", "r2", "r3"]
EXPECTED = (
    "invoke_agent recorder",
    tuple(pair for _ in VALUES for pair in (("chat scripted", ()), ("execute_tool gated_record", ())))
    + (("chat scripted", ()),),
)


def _worker(
    address: str, task_queue: str, collector: Collector, log: Path, *, batch_delay_ms: int = 50
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": str(batch_delay_ms),
    }
    command = [sys.executable, "-m", "stalwart.client.cli", "worker", "--address", address]
    command += ["--task-queue", task_queue, "--tools", "crash_trace_tools"]
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)


def _names(collector: Collector) -> list[tuple[str, object]]:
    return [(s.name, s.attributes.get("stalwart.step")) for s in collector.received()]


async def _until(condition, worker: subprocess.Popen[bytes], log: Path) -> None:
    while not condition():
        if worker.poll() is not None:
            raise AssertionError(f"the worker exited with {worker.returncode}:\n{log.read_text()}")
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_a_run_resumed_after_its_worker_was_killed_is_one_trace_without_duplicates(dev_env, tmp_path):
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    started, release = tmp_path / "started.txt", tmp_path / "release"
    agent = AgentSpec(
        name="recorder",
        tools=["gated_record"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="gated_record", arguments={"value": v})]) for v in VALUES
        ]
        + [ScriptedReply(text="Recorded.")],
    )
    inputs = {"started": str(started), "release": str(release), "hold": "r2"}
    with Collector() as collector:
        first = _worker(dev_env.address, task_queue, collector, tmp_path / "worker-1.log")
        second = None
        try:
            run = await StalwartClient(dev_env.client, task_queue=task_queue).start(agent, "Record.", inputs=inputs)
            # r2 is held in the first worker, and what it finished before (steps 1 and 2's model calls, r1) is out.
            await _until(lambda: started.exists() and "r2" in started.read_text(), first, tmp_path / "worker-1.log")
            exported_first = [("chat scripted", 1), ("execute_tool gated_record", 1), ("chat scripted", 2)]
            await _until(lambda: all(n in _names(collector) for n in exported_first), first, tmp_path / "worker-1.log")
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
            before_crash = collector.received()
            release.touch()
            second = _worker(dev_env.address, task_queue, collector, tmp_path / "worker-2.log")
            result = await run.result()
            await _until(
                lambda: any(s.name == "invoke_agent recorder" for s in collector.received()),
                second,
                tmp_path / "worker-2.log",
            )
        finally:
            for worker in (first, second):
                if worker is not None and worker.poll() is None:
                    worker.terminate()
                    worker.wait()
    assert result.answer == "Recorded."
    assert [line.split()[0] for line in started.read_text().splitlines()] == ["r1", "r2", "r2", "r3"]
    assert {s.name for s in before_crash} == {"chat scripted", "execute_tool gated_record"}
    spans = spans_of_trace(collector.received(), root_name="invoke_agent recorder", run_id=run.run_id)
    ids = [s.context.span_id for s in spans]
    assert len(ids) == len(set(ids)), f"a span was exported twice: {sorted(_names(collector), key=str)}"
    assert signature(tree(spans)) == EXPECTED
    held = [s for s in spans if s.name == "execute_tool gated_record" and s.attributes["stalwart.step"] == 2]
    assert len(held) == 1 and held[0] not in before_crash, "the interrupted call's span is ended by the second worker"


@pytest.mark.slow
async def test_a_worker_stopped_normally_sends_the_spans_it_still_holds(dev_env, tmp_path):
    """Spans wait in the exporter's batch (here for a minute); SIGTERM, as an orchestrator stops a container,
    sends them before the process exits."""
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    agent = AgentSpec(name="quick", scripted=[ScriptedReply(text="Done.")])
    with Collector() as collector:
        log = tmp_path / "worker.log"
        worker = _worker(dev_env.address, task_queue, collector, log, batch_delay_ms=60_000)
        try:
            result = await StalwartClient(dev_env.client, task_queue=task_queue).run(agent, "Go.")
            assert collector.received() == [], "the batch should still hold the spans"
            worker.send_signal(signal.SIGTERM)
            worker.wait()
            assert "stopped: drained" in log.read_text(), log.read_text()
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        received = sorted(s.name for s in collector.received())
    assert result.answer == "Done."
    assert received == ["chat scripted", "invoke_agent quick"]
