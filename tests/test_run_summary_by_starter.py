"""What the docs say of a run's Temporal summary holds for a run another SDK started: only the starter can set it
(a workflow cannot set its own in the Python SDK 1.35), so the run has none, and the workflow's current details show
its agent, status and goal however it was started."""

from __future__ import annotations

from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput

from support.repo_paths import REPO

SAID = "only the starter can set it (a workflow cannot set its own in\n  Temporal's Python SDK 1.35)"


async def test_a_run_another_sdk_started_has_no_summary_and_its_details_as_the_docs_say(
    time_skipping_env, task_queue, worker_with
):
    agent = AgentSpec(name="elsewhere", scripted=[ScriptedReply(text="4")])
    async with worker_with():
        handle = await time_skipping_env.client.start_workflow(
            WORKFLOW_TYPE,
            RunInput(agent=agent, goal="What is 2+2?"),
            id=f"elsewhere-{task_queue}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        await handle.result()
        metadata = await handle.query("__temporal_workflow_metadata")
    docs = (REPO / "docs" / "runs.md").read_text()
    assert await (await handle.describe()).static_summary() is None
    assert SAID in docs and "whose summary is its agent and goal" not in docs
    assert "**elsewhere** · done" in metadata.current_details and "goal: What is 2+2?" in metadata.current_details
