"""Payloads of any size on the dev server, which enforces Temporal's 2 MiB limit (the test server does not)."""

from __future__ import annotations

import pytest

from stalwart.activities.tools import tool
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.workers.worker import build_worker, default_registry

MB = 1_000_000
calls: list[int] = []


@tool
def produce(megabytes: float) -> str:
    """Returns that many megabytes of text.

    Args:
        megabytes: How much to return.
    """
    calls.append(1)
    return "x" * int(megabytes * MB)


def producer(*sizes: float) -> AgentSpec:
    return AgentSpec(
        name="producer",
        tools=["produce"],
        thrash_guard=False,
        budgets=Budgets(max_steps=len(sizes) + 2),
        scripted=[
            *(ScriptedReply(tool_calls=[ScriptedToolCall(name="produce", arguments={"megabytes": s})]) for s in sizes),
            ScriptedReply(text="produced"),
        ],
    )


async def _run(dev_env, task_queue: str, agent: AgentSpec, goal: str = "produce"):
    registry = default_registry()
    registry.register(produce)
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    async with build_worker(dev_env.client, task_queue=task_queue, registry=registry):
        handle = await stalwart.start(agent, goal)
        result = await handle.result()
        histories = await handle.histories()
        return handle, result, histories


@pytest.mark.slow
async def test_a_3_mb_tool_result_runs_its_tool_once_and_the_run_ends_done(dev_env, task_queue):
    calls.clear()
    handle, result, histories = await _run(dev_env, task_queue, producer(3))
    assert (result.stop_reason, result.answer) == ("done", "produced")
    assert len(calls) == 1
    [produced] = [s.result for s in result.steps if s.role == "tool"]
    assert produced is not None and len(produced) == 3 * MB, "the record keeps the whole result"
    assert sum(len(h.to_json()) for h in histories) < 1 * MB


@pytest.mark.slow
async def test_what_the_model_reads_of_a_large_result_is_cut_with_a_marker_saying_how_much(dev_env, task_queue):
    handle, result, _ = await _run(dev_env, task_queue, producer(3))
    seen = await handle.model_input(step=2)
    [told] = seen.messages[-1].tool_results
    limit = producer(3).context.max_tool_result_chars
    read = told.for_model()
    assert read.startswith("x" * limit)
    assert f"{3 * MB - limit:,} of {3 * MB:,} characters cut" in read
    assert len(read) < limit + 200


@pytest.mark.slow
async def test_two_results_of_1_5_mb_each_end_done(dev_env, task_queue):
    _, result, _ = await _run(dev_env, task_queue, producer(1.5, 1.5))
    assert result.stop_reason == "done"
    assert [len(s.result or "") for s in result.steps if s.role == "tool"] == [1_500_000, 1_500_000]


@pytest.mark.slow
async def test_tool_outputs_of_20_mb_in_one_run_end_done_with_a_small_history(dev_env, task_queue):
    _, result, histories = await _run(dev_env, task_queue, producer(*[2.5] * 8))
    assert result.stop_reason == "done"
    assert sum(len(s.result or "") for s in result.steps) == 20 * MB
    assert sum(len(h.to_json()) for h in histories) < 2 * MB


@pytest.mark.slow
async def test_a_5_mb_goal_is_accepted(dev_env, task_queue):
    goal = "g" * (5 * MB)
    _, result, _ = await _run(dev_env, task_queue, producer(), goal=goal)
    assert result.stop_reason == "done"
    assert result.steps[0].content == goal
