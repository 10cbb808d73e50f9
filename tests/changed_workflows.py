"""Deliberately changed versions of AgentWorkflow, for proving that the replay test catches incompatible changes.

They live in their own module because the workflow sandbox re-imports the
module that defines a workflow, and a test module does I/O at import time.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.run import AgentResult
    from stalwart.workflows import AgentWorkflow
    from stalwart.workflows.arguments import NO_INPUT


@workflow.defn(name="AgentWorkflow")
class MemoryFirstAgentWorkflow(AgentWorkflow):
    """The loop changed without `workflow.patched`: it calls a new activity before anything else."""

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        await workflow.execute_activity("load_agent_memory", start_to_close_timeout=timedelta(seconds=10))
        return await super().run(raw_input)


@workflow.defn(name="AgentWorkflow")
class PatchedMemoryFirstAgentWorkflow(AgentWorkflow):
    """The same change made the supported way: behind `workflow.patched`,
    so runs recorded before it replay unchanged."""

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        if workflow.patched("load-agent-memory"):
            await workflow.execute_activity("load_agent_memory", start_to_close_timeout=timedelta(seconds=10))
        return await super().run(raw_input)


@workflow.defn(name="AgentWorkflow")
class SandboxedAgentWorkflow(AgentWorkflow):
    """The loop unchanged, in the SDK's sandbox (a subclass's default), as a user's own subclass runs."""

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        return await super().run(raw_input)
