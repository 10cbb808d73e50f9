"""A session outlives the death of its worker: killed at a continue-as-new boundary or with messages
queued in the middle of a turn, the session goes on under the next worker and no message is lost,
read twice or answered twice.

Each test runs the real `stalwart worker` command as a subprocess against the dev server, kills it
with SIGKILL and starts another.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowHistory,
)

from stalwart.client.api import SessionHandle, StalwartClient
from stalwart.contracts.activities import ModelRequest
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall, SessionSettings
from stalwart.contracts.names import MODEL_ACTIVITY
from stalwart.contracts.run import AgentResult

from support.session_crash_tools import entered_by, release

TESTS_DIR = Path(__file__).resolve().parents[1]
TOOLS_MODULE = "support.session_crash_tools"
CONTINUE_AS_NEW_EVENTS = 40
MESSAGES = 24


# -- worker processes ------------------------------------------------------------


class WorkerProcess:
    """The real `stalwart worker` command in a subprocess, with tests/ importable for its tool module."""

    def __init__(self, address: str, task_queue: str, log: Path) -> None:
        self.log = log
        pythonpath = os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": pythonpath}  # STALWART_STORAGE and the rest are inherited
        command = [sys.executable, "-m", "stalwart.client.cli", "worker", "--address", address]
        command += ["--task-queue", task_queue, "--tools", TOOLS_MODULE]
        with log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)

    @property
    def pid(self) -> int:
        return self.process.pid

    def assert_healthy(self) -> None:
        """The worker runs and its workflow tasks succeed: else the test fails now instead of waiting forever."""
        if self.process.poll() is not None:
            raise AssertionError(
                f"worker {self.pid} exited by itself with code {self.process.returncode}; its log:\n"
                f"{self.log.read_text()}"
            )
        log = self.log.read_text(errors="replace")
        if "Failed activation" in log or "Failing workflow task" in log:  # a killed worker's tasks time out instead
            raise AssertionError(f"worker {self.pid} failed a workflow task; its log:\n{log[-20_000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no activity or workflow task finished on the way out."""
        self.assert_healthy()
        os.kill(self.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


async def _while_alive(task: asyncio.Future[Any], worker: WorkerProcess) -> Any:
    """The task's result, or the worker's log if the only worker left dies first (instead of waiting forever)."""
    while not task.done():
        if worker.process.poll() is not None:
            task.cancel()
        worker.assert_healthy()
        await asyncio.wait([task], timeout=0.2)
    return task.result()


# -- reading the chain's histories ----------------------------------------------------


def _events(histories: list[WorkflowHistory]) -> list[Any]:
    return [event for history in histories for event in history.events]


async def _model_calls(client: Client, histories: list[WorkflowHistory]) -> tuple[Counter[int], Counter[int]]:
    """How many model activities each step scheduled, and how many of them completed, over the whole chain."""
    scheduled: Counter[int] = Counter()
    completed: Counter[int] = Counter()
    for history in histories:  # event ids are per run
        step_of: dict[int, int] = {}
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attributes = event.activity_task_scheduled_event_attributes
                if attributes.activity_type.name == MODEL_ACTIVITY:
                    [request] = await client.data_converter.decode(list(attributes.input.payloads), [ModelRequest])
                    step_of[event.event_id] = request.step
                    scheduled[request.step] += 1
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                step = step_of.get(event.activity_task_completed_event_attributes.scheduled_event_id)
                if step is not None:
                    completed[step] += 1
    return scheduled, completed


def _updates(histories: list[WorkflowHistory], name: str) -> tuple[Counter[str], Counter[str]]:
    """Update ids of `name` accepted, and update ids completed, over the whole chain."""
    accepted: Counter[str] = Counter()
    completed: Counter[str] = Counter()
    for event in _events(histories):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == name:
                accepted[request.meta.update_id] += 1
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            completed[event.workflow_execution_update_completed_event_attributes.meta.update_id] += 1
    return accepted, completed


def _worker_pids(histories: list[WorkflowHistory]) -> set[int]:
    """The processes that completed workflow tasks of the chain (a worker's identity is `pid@host`)."""
    return {
        int(event.workflow_task_completed_event_attributes.identity.split("@")[0])
        for event in _events(histories)
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    }


# -- a worker killed at a continue-as-new boundary -------------------------------------


WORKFLOW_TASK_TIMEOUT = timedelta(seconds=4)
"""How long the server waits for a workflow task a worker took: a killed worker's task is handed on after it. The
SDK's 10 s made each kill wait 10 s; a live worker finishes a task in milliseconds, this test's first task of a new
worker process in well under a second."""


class _WorkflowTaskTimeout(Interceptor):
    """Starts every run with `WORKFLOW_TASK_TIMEOUT`; the runs it continues as new keep it."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _StartWithTaskTimeout(next)


class _StartWithTaskTimeout(OutboundInterceptor):
    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        input.task_timeout = WORKFLOW_TASK_TIMEOUT
        return await super().start_workflow(input)


def _chatter() -> AgentSpec:
    return AgentSpec(
        name="crash-chatter",
        scripted=[ScriptedReply(text=f"answer {n}") for n in range(1, MESSAGES + 1)],
        session=SessionSettings(continue_as_new_events=CONTINUE_AS_NEW_EVENTS),
    )


async def _converse(session: SessionHandle) -> list[AgentResult]:
    """Send every message by update, one after the other, each once its predecessor is answered."""
    return [await session.send(f"message {n}") for n in range(1, MESSAGES + 1)]


async def _kill_when(
    client: Client,
    session_id: str,
    worker: WorkerProcess,
    conversation: asyncio.Task[list[AgentResult]],
    ready: Callable[[WorkflowExecutionDescription], bool],
) -> WorkflowExecutionDescription:
    """SIGKILL `worker` as soon as the session's latest run is `ready`; that run as it was seen then."""
    latest = client.get_workflow_handle(session_id)
    while True:
        worker.assert_healthy()
        if conversation.done():
            conversation.result()
            raise AssertionError("every message was answered before the session reached the point to kill at")
        description = await latest.describe()
        if ready(description):
            worker.kill()
            return description
        await asyncio.sleep(0.005)


@pytest.mark.slow
async def test_a_worker_killed_at_a_continue_as_new_boundary_loses_and_repeats_nothing(dev_env, task_queue, tmp_path):
    client = Client(**{**dev_env.client.config(), "interceptors": [_WorkflowTaskTimeout()]})
    stalwart = StalwartClient(client, task_queue=task_queue)
    workers = [WorkerProcess(dev_env.address, task_queue, tmp_path / "worker-1.log")]
    try:
        session = await stalwart.start_session(_chatter())
        latest = dev_env.client.get_workflow_handle(session.run_id)
        first_run = (await latest.describe()).run_id
        conversation = asyncio.create_task(_converse(session))

        # Just after a boundary: as soon as the chain has continued as new for the first time.
        after_boundary = await _kill_when(
            dev_env.client, session.run_id, workers[-1], conversation, lambda d: d.run_id != first_run
        )
        assert (await latest.describe()).status == WorkflowExecutionStatus.RUNNING
        workers.append(WorkerProcess(dev_env.address, task_queue, tmp_path / "worker-2.log"))

        # Just before a boundary: in a run the second worker began, once its history is long enough that
        # the turn in progress continues as new when it ends.
        seen = {first_run, after_boundary.run_id}
        before_boundary = await _kill_when(
            dev_env.client,
            session.run_id,
            workers[-1],
            conversation,
            lambda d: d.run_id not in seen and (d.history_length or 0) >= CONTINUE_AS_NEW_EVENTS,
        )
        assert (await latest.describe()).status == WorkflowExecutionStatus.RUNNING
        workers.append(WorkerProcess(dev_env.address, task_queue, tmp_path / "worker-3.log"))

        results = await _while_alive(conversation, workers[-1])
        histories_before_close = await session.histories()
        final = await _while_alive(asyncio.ensure_future(session.close()), workers[-1])
        histories = await session.histories()
    finally:
        for worker in workers:
            worker.stop()

    # Every message got its own scripted answer, in order: a step repeated or skipped would shift them.
    expected = [(f"message {n}", f"answer {n}") for n in range(1, MESSAGES + 1)]
    assert [(r.stop_reason, r.answer) for r in results] == [("done", answer) for _, answer in expected]
    assert [[s.content for s in r.steps] for r in results] == [list(pair) for pair in expected]

    # The step log has each message and each answer exactly once, and one model step per message.
    assert final.stop_reason == "closed"
    assert [(s.role, s.content) for s in final.steps] == [
        (role, text) for pair in expected for role, text in zip(("user", "assistant"), pair, strict=True)
    ]
    assert [s.step for s in final.steps if s.role == "assistant"] == list(range(1, MESSAGES + 1))
    assert all(s.error is None and s.ended_at is not None for s in final.steps)

    # The chain crossed boundaries before, between and after the kills.
    assert after_boundary.run_id != first_run
    assert (before_boundary.history_length or 0) >= CONTINUE_AS_NEW_EVENTS
    assert len(histories_before_close) >= 5, [len(h.events) for h in histories_before_close]
    continued = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    assert all(h.events[-1].event_type == continued for h in histories[:-1])

    # History agrees: the model was called once per step, and each `send` was taken and answered once.
    scheduled, completed = await _model_calls(dev_env.client, histories)
    assert scheduled == completed == Counter(range(1, MESSAGES + 1))
    accepted, answered = _updates(histories, "send")
    assert len(accepted) == MESSAGES and set(accepted.values()) == {1}
    assert all(answered[update_id] == 1 for update_id in accepted)

    # Each worker, the killed ones included, ran part of the session.
    assert {w.pid for w in workers} <= _worker_pids(histories)


# -- a worker killed with messages queued in the middle of a turn ------------------------


def _held_agent() -> AgentSpec:
    return AgentSpec(
        name="held-in-a-tool",
        tools=["hold_until_released"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="hold_until_released", arguments={"topic": "x"})]),
            ScriptedReply(text="read both"),
        ],
        session=SessionSettings(),
    )


async def _until_held_by(gate: Path, worker: WorkerProcess) -> None:
    """Wait until `worker` runs an attempt of the held tool call."""
    while worker.pid not in [pid for pid, _ in entered_by(gate)]:
        worker.assert_healthy()
        await asyncio.sleep(0.02)


async def _until_queued(session: SessionHandle, count: int, worker: WorkerProcess) -> None:
    while (await session.state()).queued != count:
        worker.assert_healthy()
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_a_worker_killed_with_messages_queued_mid_turn_loses_and_duplicates_none(dev_env, task_queue, tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    workers = [WorkerProcess(dev_env.address, task_queue, tmp_path / "worker-1.log")]
    try:
        session = await stalwart.start_session(_held_agent(), inputs={"gate_dir": str(gate)})
        first = asyncio.create_task(session.send("start"))
        await _until_held_by(gate, workers[-1])
        await session.post("second")
        await session.post("third")
        await _until_queued(session, 2, workers[-1])
        workers[-1].kill()
        assert (await dev_env.client.get_workflow_handle(session.run_id).describe()).status == (
            WorkflowExecutionStatus.RUNNING
        )

        workers.append(WorkerProcess(dev_env.address, task_queue, tmp_path / "worker-2.log"))
        await _until_held_by(gate, workers[-1])  # the call is retried on the new worker, the turn still in it
        queued_on_the_new_worker = (await session.state()).queued
        release(gate)
        result = await _while_alive(first, workers[-1])
        state = await session.state()
        seen = await session.model_input(step=2)
        histories = await session.histories()
    finally:
        for worker in workers:
            worker.stop()

    assert queued_on_the_new_worker == 2
    assert (result.stop_reason, result.answer) == ("done", "read both")

    # The model's next step read both queued messages exactly once, in order, after the tool's result.
    assert [(m.role, m.content) for m in seen.messages if m.role != "assistant"] == [
        ("user", "start"),
        ("tool", ""),
        ("user", "second"),
        ("user", "third"),
    ]
    assert [r.content for m in seen.messages for r in m.tool_results] == ["released x"]

    # The step log has each message exactly once, and nothing is left queued.
    assert [(s.role, s.result if s.role == "tool" else s.content) for s in state.steps] == [
        ("user", "start"),
        ("assistant", ""),
        ("tool", "released x"),
        ("user", "second"),
        ("user", "third"),
        ("assistant", "read both"),
    ]
    assert (state.status, state.turns, state.queued) == ("waiting", 1, 0)
    assert result.steps == state.steps

    # History agrees: one model call per step, each signal received once; the tool call ran on both workers.
    scheduled, completed = await _model_calls(dev_env.client, histories)
    assert scheduled == completed == Counter({1: 1, 2: 1})
    signals = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in _events(histories)
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert signals == ["message", "message"]
    assert [pid for pid, _ in entered_by(gate)] == [w.pid for w in workers]
    assert {w.pid for w in workers} <= _worker_pids(histories)
