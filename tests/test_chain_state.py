"""The chain's state is held once and carried whole: no field of it is lost when a run continues as new.

The tests iterate `ChainState.model_fields`, so a field added later is covered without changing them; the first
one fails until the new field has a non-default value in `_every_field_set`, so its round trip is really checked.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall, SessionSettings
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.messages import Message, TranscriptRef, Usage
from stalwart.contracts.run import RunMetrics, StepArchive
from stalwart.contracts.run_input import ChainState, ContinuedRunInput, QueuedMessage, RunInput, TurnInProgress
from stalwart.contracts.tools import ToolSpec
from stalwart.workflows.chain import Chain

CAPABILITIES = Path(__file__).resolve().parent / "fixtures" / "histories" / "capabilities"
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _every_field_set() -> ChainState:
    return ChainState(
        chain_id="chain-1",
        deadline=T0 + timedelta(hours=2),
        runs=3,
        started_at=T0,
        step=41,
        usage=Usage(input_tokens=100, output_tokens=20, cost_usd=0.5),
        transcript=TranscriptRef(chain_id="chain-1", segments=4, messages=30, sha256="ab" * 32),
        context_ref="context-key",
        unsent=[Message(role="user", content="not yet read")],
        queued=[QueuedMessage(id="m-9", text="next message", received_at=T0)],
        earlier_results={'echo {"text": "a"}': (7, "a")},
        archives=[StepArchive(key="archive-0", count=12)],
        closing=True,
        turns=5,
        turn=TurnInProgress(number=5, first_record=2, started_at=T0, deadline=T0 + timedelta(hours=1), nudges=1),
        answer="an earlier answer",
        output={"answer": "an earlier answer"},
        tools=[ToolSpec(name="echo", description="Echo the text.")],
        metrics=RunMetrics(cycles=9, tool_calls=4),
    )


def _default(name: str) -> Any:
    return ChainState.model_fields[name].get_default(call_default_factory=True)


def _through_continue_as_new(carried: ChainState) -> ChainState:
    """What the next run reads: `carried` as the chain's state, carried by `Chain`, sent as the workflow's input."""
    agent = AgentSpec(name="keeper", budgets=Budgets(max_seconds=3600))
    this_run = ContinuedRunInput(agent=agent, goal="g", carried=carried)
    next_input = this_run.model_copy(update={"carried": Chain(this_run, T0).carried()})
    [payload] = DATA_CONVERTER.payload_converter.to_payloads([next_input])
    [read] = DATA_CONVERTER.payload_converter.from_payloads([payload], [ContinuedRunInput])
    assert read.carried is not None
    return read.carried


def test_the_test_state_sets_every_field_of_the_chain_state_to_a_value_other_than_its_default():
    state = _every_field_set()
    unset = [name for name in ChainState.model_fields if name not in state.model_fields_set]
    optional = [name for name, field in ChainState.model_fields.items() if not field.is_required()]
    defaulted = [name for name in optional if getattr(state, name) == _default(name)]
    assert not unset and not defaulted, (
        f"give these fields a non-default value in _every_field_set: {unset + defaulted}"
    )


@pytest.mark.parametrize("name", sorted(ChainState.model_fields))
def test_every_field_of_the_chain_state_survives_continue_as_new(name):
    before = _every_field_set()
    after = _through_continue_as_new(before)
    expected = before.runs + 1 if name == "runs" else getattr(before, name)  # the run that continued counts
    assert getattr(after, name) == expected


def test_the_public_run_input_has_no_chain_state():
    assert "carried" not in RunInput.model_fields
    assert "carried" not in json.dumps(RunInput.model_json_schema())


def _started_input(history_file: Path) -> dict[str, Any]:
    events = json.loads(history_file.read_text())["history"]["events"]
    [payload] = events[0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"]
    return json.loads(base64.b64decode(payload["data"]))


CONTINUED_FIXTURES = [
    path
    for folder in ("long_run_continued_as_new", "session_continued_as_new")
    for path in sorted((CAPABILITIES / folder).glob("*.json"))[1:]
]


@pytest.mark.parametrize("history_file", CONTINUED_FIXTURES, ids=lambda p: p.name)
def test_a_chain_state_carried_by_a_recorded_run_is_read_and_carried_on_unchanged(history_file):
    """Runs continued by earlier releases go on: the state they carried under `carried` is read whole, and written
    again under the same key reads back the same."""
    recorded = _started_input(history_file)
    read = ContinuedRunInput.model_validate(recorded)
    assert read.carried is not None and read.carried.chain_id == recorded["carried"]["chain_id"]
    [payload] = DATA_CONVERTER.payload_converter.to_payloads([read])
    written = json.loads(payload.data)
    assert set(written["carried"]) == set(ChainState.model_fields)
    assert ContinuedRunInput.model_validate(written) == read


async def test_a_run_continued_as_new_carries_its_whole_chain_state_into_every_next_run(stalwart, worker_with):
    calls = [ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": f"{n}"})]) for n in range(12)]
    agent = AgentSpec(
        name="keeper",
        tools=["echo"],
        scripted=[*calls, ScriptedReply(text="done")],
        budgets=Budgets(max_steps=30, max_seconds=3600),
        session=SessionSettings(continue_as_new_events=40),
    )
    async with worker_with():
        handle = await stalwart.start(agent, "go")
        result = await handle.result()
        histories = await handle.histories()
    assert result.answer == "done"
    assert len(histories) >= 3
    payloads = [h.events[0].workflow_execution_started_event_attributes.input.payloads[0] for h in histories]
    started = [ContinuedRunInput.model_validate_json(payload.data) for payload in payloads]
    first_run_id = histories[0].events[0].workflow_execution_started_event_attributes.first_execution_run_id
    assert started[0].carried is None
    for payload in payloads[1:]:
        assert set(json.loads(payload.data)["carried"]) == set(ChainState.model_fields), "carried whole"
    for index, run_input in enumerate(started[1:]):
        carried = run_input.carried
        assert carried is not None
        assert carried.runs == index + 1 and carried.chain_id == first_run_id
        assert carried.transcript.chain_id == first_run_id
        assert [tool.name for tool in carried.tools or []] == ["echo"]
        assert carried.turn is not None and carried.turn.number == 1 and carried.turns == 1
    steps = [carried.step for carried in (i.carried for i in started[1:]) if carried is not None]
    assert steps == sorted(steps) and steps[-1] < 13
    assert len([s for s in result.steps if s.role == "assistant"]) == 13, "the chain reads as one run"
