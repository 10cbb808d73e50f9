"""The benchmark's agent on the OpenAI Agents SDK's Temporal integration (`temporalio.openai_agents`), as its guide
sets one up: the agent loop runs in a workflow (in the SDK's sandbox, the default), each model call is the
plugin's model activity, and the tool is an activity made a tool by `activity_as_tool`.

The model provider is the Agents SDK's own `OpenAIProvider` on Chat Completions at the local fake model
(`bench/fake_model.py`), which is where Stalwart's `openai:` model sends its requests too. Tracing is off
(`RunConfig(tracing_disabled=True)`): by default the Agents SDK exports its traces to OpenAI, which neither
Stalwart nor the other peer does and which this machine cannot reach. Importing this module needs the
`peers` extra (`pip install -e '.[peers]'`).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from agents.models.openai_provider import OpenAIProvider
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.workflow import activity_as_tool

    from agents import Agent, RunConfig, Runner
    from bench.fake_model import ANSWER, INSTRUCTIONS, MODEL

NAME = "openai-agents"
TASK_QUEUE = "bench-peer-openai-agents"
TIMEOUT = timedelta(seconds=60)


@activity.defn(name="echo")
async def echo(text: str) -> str:
    """Return the text unchanged; useful to check that tool calling works.

    Args:
        text: The text to echo back.
    """
    return text


@workflow.defn(name="OpenAIAgentsPeer")
class OpenAIAgentsPeer:
    @workflow.run
    async def run(self, prompt: str, model_calls: int) -> str:
        agent = Agent(
            name="bench",
            instructions=INSTRUCTIONS,
            model=MODEL,
            tools=[activity_as_tool(echo, start_to_close_timeout=TIMEOUT)],
        )
        # max_turns defaults to 10 model calls
        result = await Runner.run(agent, prompt, max_turns=model_calls, run_config=RunConfig(tracing_disabled=True))
        if result.final_output != ANSWER:
            raise RuntimeError(f"the OpenAI Agents peer answered {result.final_output!r}")
        return str(result.final_output)


async def worker(address: str, base_url: str, api_key: str) -> tuple[Client, Worker]:
    """A client with the integration's plugin (its payload converter among other things), and a worker on it."""
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=TIMEOUT),
        model_provider=OpenAIProvider(api_key=api_key, base_url=base_url, use_responses=False),
    )
    client = await Client.connect(address, plugins=[plugin])
    return client, Worker(client, task_queue=TASK_QUEUE, workflows=[OpenAIAgentsPeer], activities=[echo])


RUN = OpenAIAgentsPeer.run
