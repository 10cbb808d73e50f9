"""Issue 11, defect 7: the idempotency key a tool gets is unique per run chain and stable across retries and
continue-as-new, so a deduplicating tool never skips a later run's real work."""

from __future__ import annotations

import uuid

from temporalio import activity

from stalwart.activities.tools import ToolContext, tool
from stalwart.activities.tools.registry import RetryableToolError
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SessionSettings

seen: list[tuple[str, int]] = []


@tool(side_effecting=True)
def flaky_once(note: str, context: ToolContext) -> str:
    """Record the key and attempt of this call; the first attempt fails as retryable.

    Args:
        note: Anything.
    """
    attempt = activity.info().attempt
    seen.append((context.idempotency_key, attempt))
    if attempt == 1:
        raise RetryableToolError("flaky, try again")
    return note


def _agent(*replies: ScriptedReply, **fields: object) -> AgentSpec:
    return AgentSpec(name="keys", tools=["flaky_once"], scripted=list(replies), **fields)  # type: ignore[arg-type]


def _call(note: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="flaky_once", arguments={"note": note})


async def test_idempotency_keys_repeat_on_retry_and_differ_between_runs_reusing_a_workflow_id(stalwart, worker_with):
    seen.clear()
    workflow_id = f"reused-{uuid.uuid4().hex[:8]}"
    spec = _agent(ScriptedReply(tool_calls=[_call("a")]), ScriptedReply(text="ok"))
    async with worker_with(flaky_once):
        first = await (await stalwart.start(spec, "go", run_id=workflow_id)).result()
        second = await (await stalwart.start(spec, "go", run_id=workflow_id)).result()
    assert (first.stop_reason, second.stop_reason) == ("done", "done")
    assert [attempt for _, attempt in seen] == [1, 2, 1, 2]
    (key1, _), (retried1, _), (key2, _), (retried2, _) = seen
    assert key1 == retried1, "a retry of one call must get the same key"
    assert key2 == retried2, "a retry of one call must get the same key"
    assert key1 != key2, "a second run reusing the workflow id must not get the first run's keys"
    assert key1.startswith(f"{workflow_id}/") and key1.endswith("/1/call_1_1")


async def test_idempotency_keys_keep_the_chain_id_across_continue_as_new(stalwart, worker_with):
    seen.clear()
    steps = 12
    spec = _agent(
        *[ScriptedReply(tool_calls=[_call(f"n{n}")]) for n in range(1, steps)],
        ScriptedReply(text="done"),
        budgets=Budgets(max_steps=steps),
        session=SessionSettings(continue_as_new_events=40),
        thrash_guard=False,
    )
    async with worker_with(flaky_once):
        handle = await stalwart.start(spec, "go")
        result = await handle.result()
        runs = len(await handle.histories())
    assert result.stop_reason == "done"
    assert runs > 1, "the run should have continued as new at least once"
    keys = [key for key, _ in seen]
    chains = {key.split("/")[1] for key in keys}
    assert len(chains) == 1, f"every key of one chain names the same first run: {sorted(chains)}"
    # Each call's two attempts share a key, and no two calls share one.
    assert len(set(keys)) == steps - 1 and all(keys.count(key) == 2 for key in keys)
