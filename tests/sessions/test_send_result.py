"""Issue 45, item 2: a session's `send` returns its turn's result without repeating the texts history holds.

The message is the update's argument and the answer the model call's result; the update's result (shape 3) leaves
both out of `steps`, and its metrics, which the steps say; `SessionHandle.send` puts them back, so a Python caller
sees the same `AgentResult`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import EventType

from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.run import AgentResult, StepRecord, Usage, run_metrics
from stalwart.contracts.send_result import SHAPE, SendResult

MESSAGE = "please echo the word marmalade back to me"
ANSWER = "the word was marmalade, echoed"


def tool_then_answer() -> AgentSpec:
    return AgentSpec(
        name="chatter",
        tools=["echo"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "marmalade"})]),
            ScriptedReply(text=ANSWER),
        ],
    )


async def test_a_sent_turns_result_comes_back_whole(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(tool_then_answer())
        result = await session.send(MESSAGE)
    assert result.answer == ANSWER
    assert [(s.role, s.content) for s in result.steps] == [
        ("user", MESSAGE),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", ANSWER),
    ]
    assert result.steps[2].result == "marmalade" and result.steps[-1].final


async def test_the_send_updates_result_holds_the_answer_once_and_not_the_message(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(tool_then_answer())
        await session.send(MESSAGE)
        history = await stalwart.temporal.get_workflow_handle(session.run_id).fetch_history()
    (completed,) = [
        e.workflow_execution_update_completed_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
    ]
    raw = json.loads(completed.outcome.success.payloads[0].data)
    assert raw["shape"] == SHAPE
    assert MESSAGE not in json.dumps(raw)
    assert json.dumps(raw).count(ANSWER) == 1 and raw["answer"] == ANSWER


def test_a_result_of_the_first_shape_is_read_as_it_is():
    now = datetime.now(UTC)
    steps = [
        StepRecord(step=0, role="user", content="greetings, sender here", started_at=now),
        StepRecord(step=1, role="assistant", content="hello", started_at=now, final=True),
    ]
    old = AgentResult(answer="hello", stop_reason="done", steps=steps, usage=Usage(), elapsed_seconds=0.1)
    read = SendResult.model_validate_json(old.model_dump_json()).restored("ignored")
    assert read.model_dump() == old.model_dump()


def test_a_result_of_the_second_shape_gets_its_message_and_answer_back():
    now = datetime.now(UTC)
    steps = [
        StepRecord(step=0, role="user", content="greetings, sender here", started_at=now),
        StepRecord(step=1, role="assistant", content="hello", started_at=now, final=True),
    ]
    whole = AgentResult(answer="hello", stop_reason="done", steps=steps, usage=Usage(), elapsed_seconds=0.1)
    wire = SendResult.without_echoes(whole, steps[0], shape=2).model_dump_json()
    assert "greetings, sender here" not in wire and wire.count("hello") == 1
    assert SendResult.model_validate_json(wire).restored("greetings, sender here").model_dump() == whole.model_dump()


def test_a_result_of_the_third_shape_gets_its_metrics_back_from_its_steps():
    start = datetime(2026, 11, 27, 12, 0, 0, 123456, tzinfo=UTC)
    steps = [
        StepRecord(step=0, role="user", content="greetings, sender here", started_at=start, ended_at=start),
        StepRecord(
            step=1,
            role="assistant",
            started_at=start,
            ended_at=start + timedelta(seconds=1.25),
            usage=Usage(input_tokens=12, output_tokens=3),
        ),
        StepRecord(
            step=1,
            role="tool",
            tool_name="echo",
            tool_call_id="c1",
            result="hi",
            started_at=start + timedelta(seconds=1.25),
            ended_at=start + timedelta(seconds=1.5),
        ),
        StepRecord(
            step=2,
            role="assistant",
            content="hello",
            started_at=start + timedelta(seconds=1.5),
            ended_at=start + timedelta(seconds=2.75),
            usage=Usage(input_tokens=20, output_tokens=2),
            final=True,
        ),
    ]
    whole = AgentResult(
        answer="hello",
        stop_reason="done",
        steps=steps,
        usage=Usage(input_tokens=32, output_tokens=5),
        elapsed_seconds=2.8,
        metrics=run_metrics(steps, elapsed_seconds=2.8),
    )
    wire = SendResult.without_echoes(whole, steps[0]).model_dump_json()
    assert json.loads(wire)["shape"] == 3 and "metrics" not in json.loads(wire)
    assert SendResult.model_validate_json(wire).restored("greetings, sender here").model_dump() == whole.model_dump()
