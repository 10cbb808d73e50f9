"""A user's own worker that runs Stalwart's agent workflow without Stalwart's activities.

A fast tool and the step archive are local activities, which only the worker running the workflow can run. The SDK
refuses one that worker does not register where the workflow schedules it (a `ValueError`, before any command), so
the workflow task fails and is retried while the run waits: no local activity timeout ever starts. The run now says
why and what to do (`StalwartActivitiesMissing`, in history, the worker's log and `stalwart show`), still waits, and
goes on with every step it took once a worker that registers the activities runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from temporalio.activity import _Definition
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker

from stalwart.activities.storage.converter import stalwart_converter
from stalwart.client.api import RunHandle, StalwartClient
from stalwart.contracts import failure_types
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall, SessionSettings
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.names import RUN_TOOL_ACTIVITY
from stalwart.contracts.run import AgentResult
from stalwart.workers.plugin import StalwartPlugin
from stalwart.workers.worker import build_worker
from stalwart.workflows import AgentWorkflow

from support.users_workflow import shout

THE_FIX = ("`stalwart worker`", "`build_worker(client, ...)`", "`StalwartPlugin()`")
"""What the error tells the user to do: each of the ways to register Stalwart's activities."""


def calculating() -> AgentSpec:
    return AgentSpec(
        name="calculating",
        tools=["calculator"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "6*7"})]),
            ScriptedReply(text="42"),
        ],
    )


def talking() -> AgentSpec:
    """A session that continues as new after its second turn (20 events, the least the setting takes)."""
    return AgentSpec(
        name="talking",
        session=SessionSettings(continue_as_new_events=20),
        scripted=[ScriptedReply(text=f"answer {n}") for n in range(4)],
    )


@contextlib.asynccontextmanager
async def workflow_only_worker(client: Client, task_queue: str, *users_activities: object) -> AsyncIterator[None]:
    """The user's worker, `workflows=[AgentWorkflow]` and their own activities only, and Stalwart's activities on
    another worker of the same task queue (so the model and full tool calls run, and only local activities cannot).
    Each worker has its own connection: two workers with activities on one queue cannot share one."""
    stalwarts = await Client.connect(
        client.service_client.config.target_host, namespace=client.namespace, data_converter=stalwart_converter()
    )
    async with (
        Worker(client, task_queue=task_queue, workflows=[AgentWorkflow], activities=list(users_activities)),
        Worker(stalwarts, task_queue=task_queue, activities=stalwart_activities()),
    ):
        yield


def stalwart_activities() -> list[Callable[..., Any]]:
    activities = StalwartPlugin().activities
    assert isinstance(activities, list)
    return activities


def activity_name(activity: Callable[..., Any]) -> str | None:
    definition = _Definition.from_callable(activity)
    return definition.name if definition else None


async def task_failures(handle: RunHandle) -> list[Failure]:
    """The failures of the run's workflow tasks so far."""
    return [
        event.workflow_task_failed_event_attributes.failure
        async for event in handle.history_events()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def failed_tasks(handle: RunHandle) -> list[Failure]:
    """The failures of the run's workflow tasks, once there is one: the run keeps running meanwhile."""
    while not (failures := await task_failures(handle)):
        await asyncio.sleep(0.05)
    return failures


def names_the_fix(message: str) -> bool:
    return all(way in message for way in THE_FIX)


async def test_a_fast_tool_on_a_worker_without_stalwarts_activities_fails_the_workflow_task_naming_the_fix(
    time_skipping_env, stalwart: StalwartClient, task_queue: str
):
    async with workflow_only_worker(time_skipping_env.client, task_queue):
        handle = await stalwart.start(calculating(), "compute 6*7")
        failure = (await failed_tasks(handle))[0]
        running = (await handle.describe()).running
    assert running, "the run waits for a worker that can run it"
    assert failure.application_failure_info.type == failure_types.ACTIVITIES_MISSING
    assert "the fast tool `calculator`" in failure.message and names_the_fix(failure.message)


async def test_a_fast_tool_on_a_worker_with_other_activities_but_not_the_tools_fails_the_workflow_task_naming_the_fix(
    time_skipping_env, stalwart: StalwartClient, task_queue: str
):
    """The SDK words its refusal differently when the worker registers activities, only not the one asked for."""
    activities = [a for a in stalwart_activities() if activity_name(a) != RUN_TOOL_ACTIVITY]
    async with Worker(
        time_skipping_env.client, task_queue=task_queue, workflows=[AgentWorkflow], activities=[*activities, shout]
    ):
        handle = await stalwart.start(calculating(), "compute 6*7")
        failure = (await failed_tasks(handle))[0]
    assert failure.cause.message.startswith("Activity function run_tool is not registered on this worker, available")
    assert failure.application_failure_info.type == failure_types.ACTIVITIES_MISSING
    assert names_the_fix(failure.message)


async def test_a_session_continuing_as_new_without_stalwarts_activities_fails_the_workflow_task_naming_the_fix(
    time_skipping_env, stalwart: StalwartClient, task_queue: str
):
    async with workflow_only_worker(time_skipping_env.client, task_queue):
        session = await stalwart.start_session(talking())
        await session.send("first")
        second = asyncio.ensure_future(session.send("second"))  # answered once the session has continued as new
        failure = (await failed_tasks(session))[0]
        second.cancel()
    assert failure.application_failure_info.type == failure_types.ACTIVITIES_MISSING
    assert "the archive of this run's steps (before continuing as new)" in failure.message
    assert names_the_fix(failure.message)


async def test_show_names_the_fix_for_a_run_held_up_by_a_worker_without_stalwarts_activities(
    dev_env, stalwart_client: StalwartClient, task_queue: str, opened: list[str]
):
    """On the dev server: the test server does not describe a run's pending workflow task, which show reads first."""
    async with workflow_only_worker(dev_env.client, task_queue):
        handle = await stalwart_client.start(calculating(), "compute 6*7")
        opened.append(handle.run_id)
        note = None
        while note is None:  # said once the task has been retried
            note = await handle.failing_task()
            await asyncio.sleep(0.05)
    assert "(StalwartActivitiesMissing)" in note
    assert "register Stalwart's activities on every worker that runs agent workflows" in note


@pytest.fixture(scope="module")
async def held_up_run(time_skipping_env) -> tuple[AgentResult, WorkflowHistory]:
    """A run held up at its fast tool by a worker without Stalwart's activities, then run to its end by a worker with
    them: its result and its history."""
    task_queue = f"held-up-{uuid.uuid4().hex[:8]}"
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with workflow_only_worker(time_skipping_env.client, task_queue):
        handle = await stalwart.start(calculating(), "compute 6*7")
        await failed_tasks(handle)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        result = await handle.result()
    return result, await handle.history()


async def test_a_run_held_up_at_a_fast_tool_ends_with_every_step_once_a_worker_with_stalwarts_activities_runs_it(
    held_up_run: tuple[AgentResult, WorkflowHistory],
):
    result, _ = held_up_run
    assert result.stop_reason == "done" and result.answer == "42"
    assert [(s.role, s.tool_name, s.result) for s in result.steps if s.role == "tool"] == [("tool", "calculator", "42")]


async def test_the_history_of_a_run_held_up_at_a_fast_tool_replays(held_up_run: tuple[AgentResult, WorkflowHistory]):
    """Its failed workflow tasks made no command, so any worker replays it; a run failed there instead would have
    recorded its failure where a worker with the activities, replaying it, runs the tool."""
    _, history = held_up_run
    assert any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in history.events)
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=DATA_CONVERTER)
    assert (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure is None


async def test_a_session_held_up_continuing_as_new_answers_once_a_worker_with_stalwarts_activities_runs_it(
    time_skipping_env, stalwart: StalwartClient, task_queue: str, worker_with
):
    async with workflow_only_worker(time_skipping_env.client, task_queue):
        session = await stalwart.start_session(talking())
        first = await session.send("first")
        second = asyncio.ensure_future(session.send("second"))
        await failed_tasks(session)
    async with worker_with():
        answered = await second
        third = await session.send("third")
        histories = await session.histories()
        final = await session.close()
    assert [first.answer, answered.answer, third.answer] == ["answer 0", "answer 1", "answer 2"]
    assert len(histories) > 1, "the session continued as new"
    said = [s.content for s in final.steps if s.role in ("user", "assistant")]
    assert said == ["first", "answer 0", "second", "answer 1", "third", "answer 2"], "no step was lost"


async def test_a_fast_tool_on_a_worker_with_stalwarts_activities_fails_no_workflow_task(
    stalwart: StalwartClient, worker_with
):
    async with worker_with():
        handle = await stalwart.start(calculating(), "compute 6*7")
        result = await handle.result()
        failed = await task_failures(handle)
    assert result.answer == "42" and failed == []
