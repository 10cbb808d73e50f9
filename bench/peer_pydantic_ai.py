"""The benchmark's agent on pydantic-ai's Temporal integration: the agent of `bench/peer_pydantic_ai_agent.py` run
in a workflow (in the SDK's sandbox, the default) whose class lists it in `__pydantic_ai_agents__`, on a client and
worker with `PydanticAIPlugin`, which registers its model and tool activities. Importing this module needs the
`peers` extra (`pip install -e '.[peers]'`) and the fake model's URL in `FAKE_MODEL_URL`.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import UsageLimits
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow

    from bench.fake_model import ANSWER
    from bench.peer_pydantic_ai_agent import AGENT

NAME = "pydantic-ai"
TASK_QUEUE = "bench-peer-pydantic-ai"


@workflow.defn(name="PydanticAIPeer")
class PydanticAIPeer(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, prompt: str, model_calls: int) -> str:
        # request_limit defaults to 50 model calls
        result = await AGENT.run(prompt, usage_limits=UsageLimits(request_limit=model_calls))
        if result.output != ANSWER:
            raise RuntimeError(f"the pydantic-ai peer answered {result.output!r}")
        return result.output


async def worker(address: str, base_url: str, api_key: str) -> tuple[Client, Worker]:
    """A client with the integration's plugin (its payload converter among other things), and a worker on it.

    The agent, built at import, already holds `base_url` and `api_key` (from the environment).
    """
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    return client, Worker(client, task_queue=TASK_QUEUE, workflows=[PydanticAIPeer])


RUN = PydanticAIPeer.run
