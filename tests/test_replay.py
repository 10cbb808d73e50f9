"""The current workflow code replays a recorded run; a changed one is caught as nondeterministic.

The fixture is a real run (re-record it with tests/fixtures/record_history.py,
whose docstring says when that is right). A run still in flight when workers
are upgraded is replayed by the new code, so a change that replays
differently breaks it: make such changes behind `workflow.patched(...)`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from changed_workflows import MemoryFirstAgentWorkflow, PatchedMemoryFirstAgentWorkflow
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.workflows import AgentWorkflow

HISTORY_FILE = Path(__file__).resolve().parent / "fixtures" / "histories" / "calculator_run.json"


def _recorded_run() -> WorkflowHistory:
    """The recorded calculator run; the file's stem is its run (workflow) id."""
    return WorkflowHistory.from_json(HISTORY_FILE.stem, HISTORY_FILE.read_text())


async def test_recorded_run_replays_on_the_current_workflow_code():
    await Replayer(workflows=[AgentWorkflow], data_converter=DATA_CONVERTER).replay_workflow(_recorded_run())


async def test_replay_fails_with_nondeterminism_when_the_workflow_schedules_a_new_activity_first():
    replayer = Replayer(workflows=[MemoryFirstAgentWorkflow], data_converter=DATA_CONVERTER)
    with pytest.raises(workflow.NondeterminismError, match="TMPRL1100"):
        await replayer.replay_workflow(_recorded_run())


async def test_the_same_change_behind_workflow_patched_replays_the_recorded_run():
    replayer = Replayer(workflows=[PatchedMemoryFirstAgentWorkflow], data_converter=DATA_CONVERTER)
    await replayer.replay_workflow(_recorded_run())
