"""A workflow input that does not decode fails the run at once, saying what is wrong, for every client."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError

from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult


async def _failure(env, task_queue: str, *args: object) -> str:
    handle = await env.client.start_workflow(
        WORKFLOW_TYPE, args=list(args), id=f"bad-{uuid.uuid4().hex[:8]}", task_queue=task_queue, result_type=AgentResult
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    return str(failed.value.cause)


def _carried(**fields: object) -> dict[str, object]:
    """A `carried` block as continue-as-new writes it, with `fields` changed: what a caller outside may forge."""
    base = {"chain_id": "c1", "runs": 0, "started_at": "2024-01-01T00:00:00Z", "step": 1, "usage": {}}
    return {**base, "transcript": {"chain_id": "c1"}, **fields}


def _turn(**fields: object) -> dict[str, object]:
    return {"number": 1, "first_record": 0, "started_at": "2024-01-01T00:00:00Z", **fields}


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"agent": {"name": "calc", "toolz": []}, "goal": "g"}, "toolz"),
        ({"agent": {"name": "calc"}}, "a run needs a goal"),
        ("just a string", "invalid run input"),
        ({"goal": "no agent"}, "agent;   Field required"),
        ({"agent": {"name": "calc", "budgets": {"max_steps": "many"}}, "goal": "g"}, "max_steps"),
        ({"agent": {"name": "calc"}, "goal": "g", "carried": _carried(step=2**70)}, "carried.step"),
        ({"agent": {"name": "calc"}, "goal": "g", "carried": _carried(usage={"input_tokens": 2**63})}, "2**63-1"),
        (
            {"agent": {"name": "calc"}, "goal": "g", "carried": _carried(turn=_turn(deadline="2024-01-01T00:00:01Z"))},
            "the agent has no `max_seconds`",
        ),
        ({"agent": {"name": "calc"}, "goal": "g", "sesion": True}, "unknown field `sesion` (did you mean `session`?)"),
        ({"agent": {"name": "calc"}, "goal": "g", "input": {"t": 1}}, "unknown field `input` (did you mean `inputs`?)"),
        (None, "binary/null"),  # what another SDK sends for nil: not JSON, so none of the fields above
        (b'{"agent": {"name": "calc"}, "goal": "g"}', "binary/plain"),  # JSON's bytes, sent as bytes
    ],
    ids=[
        "misspelt-field",
        "missing-goal",
        "bare-string",
        "missing-agent",
        "wrong-type",
        "carried-step-past-int64",
        "carried-tokens-past-int64",
        "carried-deadline-without-budget",
        "misspelt-session",
        "misspelt-inputs",
        "nil",
        "bytes",
    ],
)
async def test_a_malformed_input_fails_the_run_at_once_with_the_validation_message(
    time_skipping_env, task_queue, worker_with, raw, named
):
    async with worker_with():
        message = await _failure(time_skipping_env, task_queue, raw)
    assert named in message


async def test_no_input_at_all_fails_the_run_at_once(time_skipping_env, task_queue, worker_with):
    async with worker_with():
        message = await _failure(time_skipping_env, task_queue)
    assert "invalid run input" in message


@pytest.mark.parametrize("count", [2, 3])
async def test_a_start_with_more_than_one_input_fails_the_run_at_once_naming_the_count(
    time_skipping_env, task_queue, worker_with, count
):
    # `temporal workflow start --input A --input B`: the SDK handed both to `__init__`, whose TypeError failed every
    # workflow task until the run was terminated.
    good = {"agent": {"name": "calc"}, "goal": "g"}
    async with worker_with():
        message = await _failure(time_skipping_env, task_queue, *[good] * count)
    assert f"started with {count} inputs, not one" in message
