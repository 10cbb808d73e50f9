"""A user's own sandboxed workflows that run agents as steps, as the README shows (tests/workflow_api).

Imported by the tests and the worker, and again inside the SDK's sandbox for each run: the agents and their tools
come in through `imports_passed_through`, the way a user keeps non-workflow code out of the sandbox.
"""

from __future__ import annotations

from temporalio import workflow

from stalwart.workflow import AgentHandle, execute_agent, get_agent, start_agent

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.run import AgentResult


class Verdict(BaseModel):
    approved: bool
    reason: str


@workflow.defn
class AskAgent:
    """Runs one agent and returns its whole result."""

    @workflow.run
    async def run(self, agent: AgentSpec, goal: str) -> AgentResult:
        return await execute_agent(agent, goal)


@workflow.defn
class AskForVerdict:
    """Runs one agent for a typed answer and acts on it."""

    @workflow.run
    async def run(self, agent: AgentSpec, goal: str) -> str:
        result = await execute_agent(agent, goal, output_type=Verdict)
        verdict = result.output
        assert isinstance(verdict, Verdict), f"output is {verdict!r}"
        return f"approved={verdict.approved}: {verdict.reason}"


@workflow.defn
class ContinuesWhileTheAgentRuns:
    """Starts an agent, continues as new carrying its id, and the next run awaits it."""

    @workflow.run
    async def run(self, agent: AgentSpec, goal: str, agent_id: str) -> AgentResult:
        if not agent_id:
            handle: AgentHandle[None] = await start_agent(agent, goal)
            workflow.continue_as_new(args=[agent, goal, handle.id])
        return await get_agent(agent_id).result()


@workflow.defn
class StartsAndWaits:
    """Starts an agent that outlives this workflow (`ABANDON`) and awaits it; the caller may give the workflow an
    execution timeout, or cancel it."""

    @workflow.run
    async def run(self, agent: AgentSpec, goal: str) -> AgentResult:
        return await (await start_agent(agent, goal, id=f"{workflow.info().workflow_id}/agent"))


@workflow.defn
class TalksToASession:
    """Opens a session, sends it two messages turn by turn, closes it and returns the session's last result."""

    @workflow.run
    async def run(self, agent: AgentSpec, first: str, second: str) -> list[str]:
        session = await start_agent(agent, session=True)
        answers = [(await session.send(first)).answer, (await session.send(second)).answer]
        await session.close()
        answers.append((await session.result()).stop_reason)
        return answers


@workflow.defn
class CancelsItsAgent:
    """Starts an agent, cancels it at once, and returns what the agent's run ended with."""

    @workflow.run
    async def run(self, agent: AgentSpec, goal: str) -> AgentResult:
        handle = await start_agent(agent, goal)
        await handle.cancel()
        return await handle
