"""`stalwart replay` prints, per diverging run, the first event where the code here decides differently: its event
id, what history has there and what the code did (issue 13: the pre-deploy gate's report)."""

from __future__ import annotations

import json
from pathlib import Path

from changed_workflows import MemoryFirstAgentWorkflow

from stalwart.client.cli import EXIT_RUN_FAILED, main
from stalwart.client.replay import replay_files

RECORDED = Path(__file__).parent / "fixtures" / "histories" / "calculator_run.json"


def _renamed_tool_activity(folder: Path) -> int:
    """The recorded run as if its code had scheduled another activity for its first tool call; that event's id."""
    record = json.loads(RECORDED.read_text())
    renamed = []
    for event in record["events"]:
        scheduled = event.get("activityTaskScheduledEventAttributes")
        if scheduled and scheduled["activityType"]["name"] == "run_tool":
            scheduled["activityType"]["name"] = "some_other_activity"
            renamed.append(int(event["eventId"]))
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(record))
    return renamed[0]


def test_a_divergence_names_the_event_where_history_and_code_part(tmp_path, capsys):
    """The report said what history has and what the code did, but not where: no event id to look up."""
    event_id = _renamed_tool_activity(tmp_path / "changed")
    assert main(["replay", str(tmp_path / "changed")]) == EXIT_RUN_FAILED
    [verdict, reason] = capsys.readouterr().out.splitlines()
    assert verdict.startswith("DIVERGES  run.json ")
    assert reason.strip().startswith(f"event {event_id} (ActivityTaskScheduled): "), reason
    assert "some_other_activity" in reason and "run_tool" in reason


async def test_a_new_first_step_is_placed_at_the_first_event_its_workflow_task_decided():
    [outcome] = await replay_files([RECORDED], workflows=[MemoryFirstAgentWorkflow])
    assert not outcome.ok and outcome.divergence is not None
    first_decided = _first_command_event(json.loads(RECORDED.read_text())["events"])
    assert outcome.divergence.startswith(f"event {first_decided} ("), outcome.divergence


def _first_command_event(events: list[dict]) -> int:
    completed = next(i for i, e in enumerate(events) if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED")
    return int(events[completed + 1]["eventId"])
