"""Long rate limits (issue 11, defect 4): a Retry-After longer than the activity's retry can absorb is waited
out on a durable, labelled workflow timer when the run's wall-clock budget allows, and stops the run saying so
when it does not. Driven through the real SDKs against the wire server, on a time-skipping server of each test's
own (the wait is an hour of workflow time)."""

from __future__ import annotations

from flavors import Flavor, agent_for, start_run

from stalwart.contracts.agent import Budgets
from stalwart.workers.worker import build_worker

from wire_server.script import Fail, Reply

ANSWER = "The answer is 395."
HOUR = 3600


async def _timer_summaries(env, handle) -> list[tuple[str, float]]:
    """(summary, seconds) of every durable timer the run started."""
    history = await handle.fetch_history()
    converter = env.client.data_converter.payload_converter
    timers = []
    for event in history.events:
        if event.HasField("timer_started_event_attributes"):
            summary = converter.from_payload(event.user_metadata.summary, str)
            timers.append((summary, event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()))
    return [(summary, fire.total_seconds()) for summary, fire in timers]


async def test_long_rate_limit_is_waited_out_on_a_labelled_durable_timer_then_the_run_goes_on(
    own_time_skipping_env, task_queue, wire, flavor: Flavor
):
    env = own_time_skipping_env
    script = wire.script(Fail(429, "rate_limit_error", "Rate limit reached", retry_after=HOUR), Reply(text=ANSWER))
    agent = agent_for(flavor, script, tools=[], budgets=Budgets(max_seconds=2 * HOUR))
    async with build_worker(env.client, task_queue=task_queue):
        handle = await start_run(env, task_queue, agent, "What is 17*23+4?")
        result = await handle.result()
        timers = await _timer_summaries(env, handle)
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 2)
    provider = flavor.model.split(":")[0]
    assert (f"rate limited by {provider}: waiting 3600 s", HOUR) in timers
    [step] = [s for s in result.steps if s.role == "assistant"]
    assert (step.ended_at - step.started_at).total_seconds() >= HOUR  # workflow time: the hour was waited
    assert result.error is None


async def test_long_rate_limit_beyond_the_wall_clock_budget_stops_the_run_saying_so(
    own_time_skipping_env, task_queue, wire, flavor: Flavor
):
    env = own_time_skipping_env
    script = wire.script(Fail(429, "rate_limit_error", "Rate limit reached", retry_after=HOUR), Reply(text=ANSWER))
    agent = agent_for(flavor, script, tools=[], budgets=Budgets(max_seconds=600))
    async with build_worker(env.client, task_queue=task_queue):
        handle = await start_run(env, task_queue, agent, "What is 17*23+4?")
        result = await handle.result()
        timers = await _timer_summaries(env, handle)
    assert (result.stop_reason, len(script.requests)) == ("error", 1)
    provider = flavor.model.split(":")[0]
    assert f"rate limited by {provider}, which asked to wait 3600 s" in result.error
    assert "max_seconds=600" in result.error and "Raise max_seconds" in result.error
    assert "retrying" not in result.error and "is retried" not in result.error
    assert not [summary for summary, _ in timers if summary.startswith("rate limited")]
    assert result.elapsed_seconds < 600  # stopped at once, not at the end of the budget
