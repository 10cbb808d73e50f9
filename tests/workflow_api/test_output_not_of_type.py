"""An answer valid against the output's JSON Schema that the Python type still refuses (its validator, a `format`):
the caller reads `OutputNotOfType` saying why; its workflow fails with it (not its task, retried forever)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from typed_workflows import AskForAnEvenCount, EvenCount

from stalwart import StalwartClient, StalwartPlugin
from stalwart.contracts.agent import AgentSpec, OutputSpec, ScriptedReply
from stalwart.contracts.errors import RunFailed, UsageError
from stalwart.contracts.output_schema import OutputTypeError
from stalwart.contracts.run import AgentResult, OutputNotOfType, Usage
from stalwart.workers.worker import build_worker


def counting(answer: str) -> AgentSpec:
    return AgentSpec(name="counter", scripted=[ScriptedReply(text=answer)])


async def test_a_workflow_whose_agent_answers_outside_the_type_fails_saying_why(time_skipping_env, task_queue):
    client = time_skipping_env.client
    worker = Worker(client, task_queue=task_queue, workflows=[AskForAnEvenCount], plugins=[StalwartPlugin()])
    async with worker:
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                AskForAnEvenCount.run,
                args=[counting('{"n": 3}'), "Count."],
                id=f"even-{uuid.uuid4()}",
                task_queue=task_queue,
            )
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "OutputNotOfType" and cause.non_retryable
    assert "fits its output schema but not EvenCount" in cause.message and "n must be even" in cause.message


async def test_a_workflow_whose_agent_answers_inside_the_type_gets_it(time_skipping_env, task_queue):
    client = time_skipping_env.client
    worker = Worker(client, task_queue=task_queue, workflows=[AskForAnEvenCount], plugins=[StalwartPlugin()])
    async with worker:
        n = await client.execute_workflow(
            AskForAnEvenCount.run,
            args=[counting('{"n": 4}'), "Count."],
            id=f"even-{uuid.uuid4()}",
            task_queue=task_queue,
        )
    assert n == 4


async def test_a_client_run_reads_an_answer_outside_the_type_as_output_not_of_type(time_skipping_env, task_queue):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        with pytest.raises(OutputNotOfType) as raised:
            await stalwart.run(counting('{"n": 3}'), "Count.", output_type=EvenCount)
    assert isinstance(raised.value, RunFailed) and "n must be even" in str(raised.value)


async def test_a_client_run_gives_an_agent_without_an_output_one_for_the_type_asked(time_skipping_env, task_queue):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        result = await stalwart.run(counting('{"n": 8}'), "Count.", output_type=EvenCount)
    assert result.output == EvenCount(n=8)


async def test_a_client_run_with_a_type_pydantic_cannot_read_is_refused_before_it_starts(time_skipping_env, task_queue):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    typed = counting("4").model_copy(update={"output": OutputSpec.for_type(int)})
    with pytest.raises(OutputTypeError) as refused:  # no worker: a run that started would never end
        await stalwart.run(typed, "Count.", output_type=5)
    assert isinstance(refused.value, UsageError) and "5 cannot be an agent's output" in str(refused.value)


async def test_reading_a_result_as_a_type_pydantic_cannot_read_says_so(time_skipping_env, task_queue):
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await stalwart.start(
            counting('{"n": 4}').model_copy(update={"output": OutputSpec.for_type(EvenCount)}), "Count."
        )
        with pytest.raises(OutputTypeError) as refused:
            await handle.result(output_type=Callable[[int], int])
        assert (await handle.result()).output == {"n": 4}  # the run's answer is kept, to read as another type
    assert "pydantic builds no JSON Schema for it" in str(refused.value)


def test_reading_a_result_as_a_function_refuses_it_without_calling_it():
    called = []

    def refund(order_id: str) -> None:
        called.append(order_id)

    result = AgentResult(
        answer="{}", stop_reason="done", steps=[], usage=Usage(), elapsed_seconds=0, output={"order_id": "7"}
    )
    with pytest.raises(OutputTypeError, match="it is a function"):
        result.output_as(refund)
    assert called == []
