"""A sub-agent's run that fails as a workflow (here: terminated) is feedback to the parent, never the parent's end.

On the dev server: the time-skipping test server does not tell a parent that
its child was terminated, so the parent there would wait for ever.
"""

from __future__ import annotations

import pytest
from delegation_team import blocked_researcher, child_id, delegating, lead
from temporalio.client import WorkflowExecutionStatus

from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import ScriptedReply
from stalwart.workers.worker import build_worker, default_registry

from support.hour_long_tool import hour_long_job, tool_started

FAILURE = (
    "Delegation failed: sub-agent researcher failed: Terminated. Try a narrower task, or answer with what you have."
)


@pytest.mark.slow
async def test_a_terminated_sub_agent_is_fed_back_to_the_model_as_a_delegation_error_and_the_parent_finishes(
    dev_env, task_queue
):
    stalwart = StalwartClient(dev_env.client, task_queue=task_queue)
    registry = default_registry()
    registry.register(hour_long_job)
    sub = blocked_researcher()
    async with build_worker(dev_env.client, task_queue=task_queue, registry=registry):
        handle = await stalwart.start(
            lead(delegating(), ScriptedReply(text="The researcher was stopped."), sub=sub), "Explain"
        )
        await tool_started.wait()
        child = dev_env.client.get_workflow_handle(child_id(handle.run_id))
        await child.terminate(reason="an operator stopped it")
        result = await handle.result()
        events = await handle.events()
        seen = await handle.model_input(step=2)
        child_status = (await child.describe()).status
    assert child_status == WorkflowExecutionStatus.TERMINATED
    assert [e.event_type for e in events] == [
        "user_message",
        "delegation_request",
        "delegation_error",
        "agent_response",
    ]
    assert events[2].content == FAILURE
    [fed_back] = seen.messages[-1].tool_results
    assert (fed_back.text, fed_back.is_error) == (FAILURE, True)
    assert (result.stop_reason, result.answer) == ("done", "The researcher was stopped.")
