"""A new version of AgentWorkflow, for the tests that deploy new code under running agents (tests/deploys/).

The change is a real one: after each turn the new code runs one more activity
(`summarise_turn`), a new command in the loop's history. `PatchedNewCodeWorkflow`
makes it behind `workflow.patched`, as docs/deploying.md, "Patching", asks;
`UnpatchedNewCodeWorkflow` makes the same change without it, the negative control.
Both are registered under the workflow type name `AgentWorkflow`, as a new
release of Stalwart would be. They live in their own module because the workflow
sandbox re-imports the module that defines a workflow.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.run import AgentResult, StopReason
    from stalwart.contracts.run_input import TurnInProgress
    from stalwart.workflows import AgentWorkflow
    from stalwart.workflows.arguments import NO_INPUT

PATCH_ID = "summarise-turn"
SUMMARY_ACTIVITY = "summarise_turn"


@activity.defn(name=SUMMARY_ACTIVITY)
async def summarise_turn(turn: int) -> str:
    """The new step: what a new release might do at the end of every turn (here: say which turn ended)."""
    return f"turn {turn} summarised"


async def _summarise(turn: TurnInProgress) -> None:
    await workflow.execute_activity(
        SUMMARY_ACTIVITY, turn.number, result_type=str, start_to_close_timeout=timedelta(seconds=30)
    )


@workflow.defn(name="AgentWorkflow")
class PatchedNewCodeWorkflow(AgentWorkflow):
    """The new release: a summary after each turn, behind a patch so runs in flight replay unchanged."""

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        return await super().run(raw_input)

    async def _run_turn(self, turn: TurnInProgress) -> StopReason:
        stop = await super()._run_turn(turn)
        if workflow.patched(PATCH_ID):
            await _summarise(turn)
        return stop


@workflow.defn(name="AgentWorkflow")
class UnpatchedNewCodeWorkflow(AgentWorkflow):
    """The same release without the patch: a run that ended a turn on the old code no longer replays."""

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        return await super().run(raw_input)

    async def _run_turn(self, turn: TurnInProgress) -> StopReason:
        stop = await super()._run_turn(turn)
        await _summarise(turn)
        return stop
