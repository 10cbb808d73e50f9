"""`AskForVerdict` of users_workflows.py changed without a patch, to prove its recorded history catches the change."""

from __future__ import annotations

from temporalio import workflow

from stalwart.workflow import execute_agent

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.agent import AgentSpec


@workflow.defn(name="AskForVerdict")
class AskForVerdictAskingTwice:
    """Runs the agent twice where the recorded workflow ran it once."""

    @workflow.run
    async def run(self, agent: AgentSpec, goal: str) -> str:
        await execute_agent(agent, goal)
        await execute_agent(agent, goal)
        return ""
