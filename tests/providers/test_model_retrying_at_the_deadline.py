"""A provider failing every attempt while the run's wall-clock timer fires between two of them (issue 43, item 6):
the timer cancels the call as it waits out its backoff, and a cancelled activity carries no failure, so the run
ended `max_seconds` saying only that the budget ran out. Its error names the last attempt's failure now, read from
the server's description of the run just before the call is cancelled.

With `max_seconds=6`, attempts start at about 0, 1 and 3 s (`MODEL_RETRY`'s backoff) and the fourth is due at about
7 s: within the 5 s the activity's timeouts run past the deadline (`deadlines.CAP_GRACE`), so the server has not
given up on the call when the timer fires at 6 s, however long an attempt takes on a busy machine (up to a second).
A longer budget can let the server give up first, between two attempts further apart than that grace: then the
call fails for good before the deadline (test_model_failing_until_the_deadline.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from flavors import FLAVORS, Flavor, agent_for, run_agent

from stalwart.activities import retried_calls
from stalwart.contracts.agent import Budgets

from wire_server.script import Fail


@pytest.mark.parametrize("flavor", [FLAVORS[0]], indirect=True, ids=[FLAVORS[0].id])
@pytest.mark.parametrize(
    "failure",
    [Fail(500, "server_error", "the model is down"), Fail(429, "rate_limit_exceeded", "slow down, please")],
    ids=["500", "429"],
)
async def test_a_model_call_cut_by_the_deadline_between_retries_names_its_last_failure(
    own_time_skipping_env, task_queue, wire, flavor: Flavor, failure: Fail
):
    script = wire.script(*[failure] * 30)
    budgets = Budgets(max_seconds=6)
    result = await run_agent(own_time_skipping_env, task_queue, agent_for(flavor, script, tools=[], budgets=budgets))
    assert result.stop_reason == "max_seconds", result.error
    assert result.error is not None
    assert "wall-clock budget of 6s reached while a call was being retried" in result.error
    assert f"the model call failed {len(script.requests)} attempts, the last with ModelUnavailableError" in result.error
    assert failure.message in result.error


@pytest.mark.parametrize("flavor", [FLAVORS[0]], indirect=True, ids=[FLAVORS[0].id])
async def test_a_model_call_failing_for_good_while_the_run_asks_why_is_named_after_the_retried_calls(
    own_time_skipping_env, task_queue, wire, flavor: Flavor, monkeypatch
):
    """The timer fires at 2 s while the call runs or waits for its third attempt (due at about 3 s); the run asks why
    its calls were failing, and the answer comes back slowly, so the third attempt fails for good (401) meanwhile. The
    turn is cut all the same, and its error names that final failure after the retried call's last failure."""
    read = retried_calls._last_failure
    down = Fail(500, "server_error", "the model is down")
    script = wire.script(down, down, Fail(401, "authentication_error", "Incorrect API key provided: sk-test...6789"))

    async def read_slowly(*args: Any) -> str:
        said = await read(*args)
        # The third attempt fails for good meanwhile: the answer waits for the model to have refused it, and a
        # second more for the worker to report that failure (a fixed wait lost that race on a busy machine).
        for _ in range(600):  # at most 30 s: a third attempt that never comes fails the asserts below, not a hang
            if len(script.requests) >= 3:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1)
        return said

    monkeypatch.setattr(retried_calls, "_last_failure", read_slowly)
    budgets = Budgets(max_seconds=2)
    result = await run_agent(own_time_skipping_env, task_queue, agent_for(flavor, script, tools=[], budgets=budgets))
    assert result.stop_reason == "max_seconds", result.error
    assert result.error is not None
    assert result.error.startswith("wall-clock budget of 2s reached while a call was being retried: the model call")
    assert "the last with ModelUnavailableError" in result.error and "the model is down" in result.error
    assert "then, before the turn was cut, model call at step 1 failed:" in result.error
    assert "Incorrect API key provided" in result.error
