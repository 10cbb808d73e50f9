"""Seed 003, the production agent loop tutorial: its three failure modes' mitigations that the loop applies.

Each test quotes the line of `../shared/reference/seeds/003_df6bccbbfaf36db2.txt` it checks.
"""

from __future__ import annotations

from stalwart.client.agent_files import load_agent
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import (
    PERSISTENCE_PROMPT,
    AgentSpec,
    Budgets,
    LoopSettings,
    ScriptedReply,
    ScriptedToolCall,
)
from stalwart.workers.worker import build_worker
from stalwart.workflows.conversation import TOOL_REMINDER

GIVE_UP = "I'm sorry, I wasn't able to find the information you requested."
REMINDER_START = TOOL_REMINDER.split("{")[0]


def echo(n: int) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"call {n}"})])


def agent(*replies: ScriptedReply, loop: LoopSettings | None = None, tools: tuple[str, ...] = ("echo",)) -> AgentSpec:
    return AgentSpec(
        name="tutorial",
        tools=list(tools),
        scripted=list(replies),
        budgets=Budgets(max_steps=30),
        loop=loop or LoopSettings(),
    )


async def reminded_steps(stalwart: StalwartClient, spec: AgentSpec) -> tuple[list[int], str]:
    run = await stalwart.start(spec, "Echo many times")
    result = await run.result()
    steps = [s.step for s in result.steps if s.role == "assistant"]
    reminded, line = [], ""
    for step in steps:
        messages = (await run.model_input(step)).messages
        texts = [m.content for m in messages if m.role == "user" and m.content.startswith(REMINDER_START)]
        if texts and texts[-1] == messages[-1].content:
            reminded.append(step)
            line = texts[-1]
    return reminded, line


async def test_a_reminder_of_the_tools_goes_out_every_ten_model_calls_by_default(time_skipping_env, task_queue):
    """Seed 003, failure 3 (format drift on long runs): "a periodic refresh — every 10 turns, inject a one-line
    system reminder: 'Remember your tools and their schemas.'"."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    spec = agent(*(echo(n) for n in range(1, 22)), ScriptedReply(text="Done."))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        reminded, line = await reminded_steps(stalwart, spec)
    assert reminded == [11, 21]  # sent after the 10th and the 20th model call, before the next
    assert line == "Remember your tools and their schemas: echo(text: string)."


async def test_the_reminder_interval_is_set_in_the_agent_file_and_0_turns_it_off(time_skipping_env, task_queue):
    """Seed 003: "every 10 turns" - configurable (`[loop] tool_reminder_every`), off with 0."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    replies = [*(echo(n) for n in range(1, 7)), ScriptedReply(text="Done.")]
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        every_three, _ = await reminded_steps(stalwart, agent(*replies, loop=LoopSettings(tool_reminder_every=3)))
        never, _ = await reminded_steps(stalwart, agent(*replies, loop=LoopSettings(tool_reminder_every=0)))
    assert (every_three, never) == ([4, 7], [])


async def test_an_answer_that_gives_up_early_is_met_with_the_persistence_prompt(time_skipping_env, task_queue):
    """Seed 003, failure 2 (premature giving-up): "After two failed tool calls the model produces 'I'm sorry, I
    wasn't able to find the information you requested' and stops. ... Mitigation: ... 'Try at least three different
    approaches before giving up. Tools are cheap; the user prefers a slow correct answer to a fast wrong one.'"."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    spec = agent(ScriptedReply(text=GIVE_UP), echo(1), ScriptedReply(text="Found it: call 1."))
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(spec, "Find it")
        result = await run.result()
        second = await run.model_input(2)
    assert (result.stop_reason, result.answer) == ("done", "Found it: call 1.")
    assert second.messages[-1].content == PERSISTENCE_PROMPT
    assert "Try at least three different approaches before giving up" in PERSISTENCE_PROMPT
    assert [s.final for s in result.steps if s.role == "assistant"] == [False, False, True]


async def test_an_answer_asking_the_user_to_do_what_a_tool_could_is_met_with_the_prompt(time_skipping_env, task_queue):
    """Issue 12: "a persistence prompt when the model gives up early (an answer that asks the user to do what a
    tool could)"; the prompt is the agent file's `[loop] persistence_prompt`."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    loop = LoopSettings(persistence_prompt="Use your tools yourself.")
    spec = agent(ScriptedReply(text="You can check that with the echo tool."), ScriptedReply(text="Ok."), loop=loop)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        run = await stalwart.start(spec, "Echo hi")
        result = await run.result()
        second = await run.model_input(2)
    assert result.answer == "Ok." and second.messages[-1].content == "Use your tools yourself."


async def test_persistence_is_prompted_at_most_the_configured_times_a_turn_and_never_without_tools(
    time_skipping_env, task_queue
):
    """Seed 003's mitigation, bounded: `[loop] persistence_nudges` (default 1) a turn, 0 turns it off; an agent
    without tools has nothing to persist with."""
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    twice = [ScriptedReply(text=GIVE_UP), ScriptedReply(text=GIVE_UP + " Sorry again.")]
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        once = await stalwart.run(agent(*twice), "Find it")
        off = await stalwart.run(agent(*twice, loop=LoopSettings(persistence_nudges=0)), "Find it")
        toolless = await stalwart.run(agent(*twice, tools=()), "Find it")
    assert (once.answer, len([s for s in once.steps if s.role == "assistant"])) == (GIVE_UP + " Sorry again.", 2)
    assert off.answer == GIVE_UP and toolless.answer == GIVE_UP


def test_the_agent_file_sets_the_temperature_and_the_loop_settings(tmp_path):
    """Seed 003: "low temperature (0.0–0.2)" - `temperature` and the `[loop]` table in the agent file."""
    path = tmp_path / "tutorial.toml"
    path.write_text(
        'name = "tutorial"\ntemperature = 0.1\n[loop]\ntool_reminder_every = 5\npersistence_nudges = 2\n'
        'persistence_prompt = "Keep going."\n'
    )
    spec = load_agent(path)
    assert (spec.temperature, spec.loop.tool_reminder_every, spec.loop.persistence_nudges) == (0.1, 5, 2)
    assert spec.loop.persistence_prompt == "Keep going."
