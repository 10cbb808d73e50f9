"""The current workflow code replays a recorded run; a changed one is caught as nondeterministic.

The fixture is a real run (re-record it with tests/fixtures/record_history.py,
whose docstring says when that is right). A run still in flight when workers
are upgraded is replayed by the new code, so a change that replays
differently breaks it: make such changes behind `workflow.patched(...)`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from changed_workflows import MemoryFirstAgentWorkflow, PatchedMemoryFirstAgentWorkflow, SandboxedAgentWorkflow
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from stalwart.client.replay import history_files
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.run import Usage
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


async def test_a_contract_defined_after_a_sandboxed_subclass_does_not_stop_its_replay():
    """The sandbox imports the subclass's module again, which builds no contract there: a still-deferred one from a
    module the sandbox never imported (a user's subclass of a public contract, here) failed there as "name 'Any' is
    not defined" and the worker refused the workflow. Built outside, it is only used there."""

    class Billing(Usage):  # this module is not in the sandbox either
        account: str = ""

    assert not Billing.__pydantic_complete__
    replayer = Replayer(workflows=[SandboxedAgentWorkflow], data_converter=DATA_CONVERTER)
    await replayer.replay_workflow(_recorded_run())
    assert Billing(account="a").model_dump_json() == '{"account":"a"}'


def test_a_sandboxed_subclass_replays_every_recorded_capability_in_a_fresh_process():
    """In a process that has built no contract yet, as a worker or a replay in CI starts: a contract first met
    inside the sandbox was built against its module table and failed as "`RunInput` is not fully defined"."""
    tests = Path(__file__).resolve().parent
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from changed_workflows import SandboxedAgentWorkflow\n"
        "from stalwart.client.replay import replay_files\n"
        "from stalwart.workers.process_exit import run_then_exit\n"
        "async def main():\n"
        "    outcomes = await replay_files([Path(sys.argv[2])], workflows=[SandboxedAgentWorkflow])\n"
        "    print(len(outcomes)); [print(o.name, o.divergence or o.unreadable) for o in outcomes if not o.ok]\n"
        "run_then_exit(main())\n"  # as a script should: finalized, Temporal's core threads abort it now and then
    )
    capabilities = tests / "fixtures" / "histories" / "capabilities"
    replayed = subprocess.run(
        [sys.executable, "-c", script, str(tests), str(capabilities)], capture_output=True, text=True, check=False
    )
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    count, *failed = replayed.stdout.splitlines()
    assert not failed, "\n".join(failed)
    assert int(count) == len(history_files([capabilities])) > 20
