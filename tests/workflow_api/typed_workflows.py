"""A user's workflow reading an agent's answer as a type whose rule the JSON Schema does not carry (a pydantic
validator): imported by the test and again inside the SDK's sandbox, as users_workflows.py is."""

from __future__ import annotations

from temporalio import workflow

from stalwart.workflow import execute_agent

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, field_validator

    from stalwart.contracts.agent import AgentSpec


class EvenCount(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _even(cls, n: int) -> int:
        if n % 2:
            raise ValueError("n must be even")
        return n


@workflow.defn
class AskForAnEvenCount:
    @workflow.run
    async def run(self, agent: AgentSpec, goal: str) -> int:
        result = await execute_agent(agent, goal, output_type=EvenCount)
        return result.output.n
