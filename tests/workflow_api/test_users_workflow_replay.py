"""A user's workflow that ran an agent as a step replays from its recorded history on the code here.

The history was recorded by tests/fixtures/record_users_workflow.py (its docstring says when to re-record); the
agent's own run, the child, is replayed with the other capabilities by tests/test_replay_fixtures.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from changed_users_workflows import AskForVerdictAskingTwice
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from users_workflows import AskForVerdict

from stalwart.workers.plugin import StalwartPlugin

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "histories" / "users_workflows" / "ask_for_verdict.json"


def _history() -> WorkflowHistory:
    return WorkflowHistory.from_json("ask-for-verdict", RECORDED.read_text())


async def test_a_users_workflow_that_ran_an_agent_replays_from_its_recorded_history():
    replayer = Replayer(workflows=[AskForVerdict], plugins=[StalwartPlugin()])
    result = await replayer.replay_workflow(_history(), raise_on_replay_failure=False)
    assert result.replay_failure is None


async def test_the_same_workflow_changed_without_a_patch_fails_its_replay():
    replayer = Replayer(workflows=[AskForVerdictAskingTwice], plugins=[StalwartPlugin()])
    result = await replayer.replay_workflow(_history(), raise_on_replay_failure=False)
    assert result.replay_failure is not None
    assert "TMPRL1100" in str(result.replay_failure) or "Nondeterminism" in type(result.replay_failure).__name__


@pytest.mark.parametrize("path", [RECORDED])
def test_the_recorded_history_is_of_a_users_workflow_starting_stalwarts_agent_workflow(path):
    history = WorkflowHistory.from_json("ask-for-verdict", path.read_text())
    started = [
        e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
        for e in history.events
        if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]
    assert started == ["AgentWorkflow"]
