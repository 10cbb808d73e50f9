"""A long Retry-After waited out on a durable timer is said while it lasts (issue 43, item 6): `show` and `run` said
nothing for minutes, since no step ends and no word is written meanwhile. The run's state and the UI's current
details say who rate-limited it, how long it waits and until when; `stalwart run` prints it once."""

from __future__ import annotations

import asyncio
import io

import pytest
from flavors import FLAVORS, Flavor, agent_for

from stalwart.client import render
from stalwart.client.api import StalwartClient
from stalwart.client.commands.runs import say_what_the_run_waits_out
from stalwart.contracts.agent import Budgets
from stalwart.workers.worker import build_worker

from wire_server.script import Fail, Reply

HOUR = 3600


@pytest.mark.parametrize("flavor", [FLAVORS[0]], indirect=True, ids=[FLAVORS[0].id])
async def test_a_long_retry_after_is_said_by_state_show_the_ui_and_once_by_run(
    own_time_skipping_env, task_queue, wire, flavor: Flavor
):
    env = own_time_skipping_env
    script = wire.script(Fail(429, "rate_limit_error", "Rate limit reached", retry_after=HOUR), Reply(text="done"))
    agent = agent_for(flavor, script, tools=[], budgets=Budgets(max_seconds=2 * HOUR))
    stalwart = StalwartClient(env.client, task_queue=task_queue)
    live = io.StringIO()
    async with build_worker(env.client, task_queue=task_queue):
        run = await stalwart.start(agent, "What is 17*23+4?")
        saying = asyncio.create_task(say_what_the_run_waits_out(run, live, every=0.05))
        while not live.getvalue():  # no time passes on this server until the result is awaited
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # more looks at the same wait
        state = await run.state()
        metadata = await env.client.get_workflow_handle(run.run_id).query("__temporal_workflow_metadata")
        saying.cancel()
        result = await run.result()
        after = await run.state()
    provider = flavor.model.split(":")[0]
    assert state.waiting is not None
    assert state.waiting.startswith(f"rate limited by {provider}: waiting 3600 s, until ")
    assert live.getvalue() == f"waiting: {state.waiting}\n"
    shown = io.StringIO()
    render.print_state(run.run_id, state, None, shown)
    assert f"waiting: {state.waiting}" in shown.getvalue()
    assert f"waiting: {state.waiting}" in metadata.current_details
    assert result.stop_reason == "done" and after.waiting is None
