"""A provider that fails every attempt until the run's wall-clock budget runs out (issue 43, item 6): the run ended
`error`, as if the model call had failed for good on its own, though it was the budget that cut its retries short
(the server does not start an attempt past the schedule-to-close timeout, which is capped at the deadline). It ends
`max_seconds`, saying that the model failed every attempt and how; with `finalize_on_budget` no last call is made
(the time is spent, and the provider answers nothing)."""

from __future__ import annotations

import pytest
from flavors import FLAVORS, Flavor, agent_for, run_agent

from stalwart.contracts.agent import Budgets

from wire_server.script import Fail


@pytest.mark.parametrize("flavor", [FLAVORS[0]], indirect=True, ids=[FLAVORS[0].id])
async def test_a_model_failing_every_attempt_until_the_deadline_stops_the_run_with_max_seconds(
    own_time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(*[Fail(500, "server_error", "the model is down")] * 30)
    budgets = Budgets(max_seconds=20, finalize_on_budget=True)
    result = await run_agent(own_time_skipping_env, task_queue, agent_for(flavor, script, tools=[], budgets=budgets))
    assert result.stop_reason == "max_seconds", result.error
    assert result.error is not None
    assert "failed every attempt within the wall-clock budget (max_seconds=20)" in result.error
    assert "the model is down" in result.error
    assert result.answer == ""
    assert len(script.requests) < 30  # no finalize call, no attempt after the deadline
