from __future__ import annotations

from client.api import StalwartClient
from contracts import AgentSpec, ScriptedReply, ScriptedToolCall
from workers.worker import build_worker


async def test_scripted_agent_calls_calculator_and_answers(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="calc",
        tools=["calculator"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "17*23+4"})]),
            ScriptedReply(text="The answer is 395."),
        ],
    )
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        result = await stalwart.run(agent, "What is 17*23+4?")
    assert result.stop_reason == "done"
    assert result.answer == "The answer is 395."
    tool_steps = [s for s in result.steps if s.role == "tool"]
    assert tool_steps[0].result == "395"
