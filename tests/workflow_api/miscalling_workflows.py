"""A user's workflow that calls `execute_agent` with an argument of the wrong type, as the bug bash found users do
(tests/workflow_api/test_execute_agent.py): the refusal must end the workflow, not wedge its task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow

from stalwart.workflow import execute_agent

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.agent import AgentSpec, OutputSpec, ScriptedReply
    from stalwart.contracts.run import AgentResult


def _agent() -> AgentSpec:
    return AgentSpec(name="plain", scripted=[ScriptedReply(text="hi")])


WRONG_CALLS: dict[str, dict[str, Any]] = {
    "agent as a dict": {"agent": {"name": "plain"}, "goal": "go"},
    "agent as a path": {"agent": "agents/calculator.toml", "goal": "go"},
    "goal as a number": {"goal": 42},
    "inputs not JSON": {"goal": "go", "inputs": {"when": object()}},
    "output type without a schema": {"goal": "go", "output_type": Callable[[int], int]},
    "output type without a schema, for a typed agent": {
        "agent": AgentSpec(
            name="typed",
            output=OutputSpec.model_validate({"schema": {"type": "integer"}}),
            scripted=[ScriptedReply(text="4")],
        ),
        "goal": "go",
        "output_type": Callable[[int], int],
    },
    "output type an instance": {"goal": "go", "output_type": 5},
}
"""execute_agent's arguments by case; a case without `agent` passes a valid one."""


@workflow.defn
class CallsAnAgentWrongly:
    """Calls `execute_agent` with the arguments of one of `WRONG_CALLS`, and lets what it raises end the run."""

    @workflow.run
    async def run(self, case: str) -> AgentResult:
        arguments = dict(WRONG_CALLS[case])
        agent = arguments.pop("agent", None) or _agent()
        return await execute_agent(agent, **arguments)
