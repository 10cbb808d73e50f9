"""A tool failing every attempt while the run's wall-clock timer fires between two of them (issue 43, item 6): the
timer cancels the call as it waits out its backoff, and a cancelled activity carries no failure, so the run ended
`max_seconds` saying only that the budget ran out. Its error names the last attempt's failure now (type, tool and
message), read from the server's description of the run just before the call is cancelled.

With `max_seconds=6`, attempts start at about 0, 1 and 3 s (`TOOL_RETRY`'s backoff) and the fourth is due at about
7 s: within the 5 s the activity's timeouts run past the deadline (`deadlines.CAP_GRACE`), so the server has not
given up on the call when the timer fires at 6 s, however long an attempt takes on a busy machine (up to a second).
"""

from __future__ import annotations

from stalwart.activities.tools.registry import RetryableToolError, tool
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.workers.worker import build_worker, default_registry

attempts: list[str] = []


@tool(side_effecting=True, heartbeat_timeout_seconds=60)
async def always_locked(target: str) -> str:
    """Acts on `target`, which another job keeps locked.

    Args:
        target: What to act on.
    """
    attempts.append(target)
    raise RetryableToolError(f"{target} is locked by another job")


async def test_a_tool_call_cut_by_the_deadline_between_retries_names_its_last_failure(
    own_time_skipping_env, task_queue
):
    attempts.clear()
    registry = default_registry()
    registry.register(always_locked)
    agent = AgentSpec(
        name="locked",
        tools=["always_locked"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="always_locked", arguments={"target": "db"})]),
            ScriptedReply(text="never reached"),
        ],
        budgets=Budgets(max_seconds=6),
    )
    async with build_worker(own_time_skipping_env.client, task_queue=task_queue, registry=registry):
        handle = await StalwartClient(own_time_skipping_env.client, task_queue=task_queue).start(agent, "act")
        result = await handle.result()
    assert result.stop_reason == "max_seconds", result.error
    assert result.error == (
        "wall-clock budget of 6s reached while a call was being retried: a tool call failed "
        f"{len(attempts)} attempts, the last with RetryableToolError: always_locked: db is locked by another job"
    )
    assert result.steps[-1].error == "cancelled: wall-clock budget of 6s reached"
