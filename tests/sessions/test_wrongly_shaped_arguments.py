"""A session's signal and updates reached by any client with any JSON: a wrong shape is refused saying what it takes.

Left to the SDK, an update with the wrong shape was refused as "Failed decoding arguments", and a signal was
dropped with a traceback in the worker's log; neither said what the handler takes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall, SessionSettings

MESSAGE_SHAPE = "takes one argument, the message text as a JSON string"
DECISION_SHAPE = 'the decision as a JSON object: {"call_id": "..."'


def _session_agent() -> AgentSpec:
    return AgentSpec(name="chatter", scripted=[ScriptedReply(text="heard you")], session=SessionSettings())


async def _refusal(handle: WorkflowHandle[Any, Any], update: str, *args: object) -> ApplicationError:
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(update, args=list(args))
    assert isinstance(refused.value.cause, ApplicationError)
    return refused.value.cause


@pytest.mark.parametrize(
    ("argument", "shown"),
    [({"text": "hello"}, '{"text":"hello"}'), (42, "42"), (["hello"], '["hello"]')],
    ids=["object", "number", "list"],
)
async def test_a_send_that_is_not_text_is_refused_naming_the_shape_and_what_came(
    stalwart, worker_with, argument, shown
):
    async with worker_with():
        session = await stalwart.start_session(_session_agent())
        handle = stalwart.temporal.get_workflow_handle(session.run_id)
        refused = await _refusal(handle, "send", argument)
        history = await handle.fetch_history()
    assert refused.type == "InvalidArgument" and refused.non_retryable
    assert f"`send` {MESSAGE_SHAPE}" in refused.message
    assert f"it got {shown}" in refused.message
    assert not any(e.HasField("workflow_execution_update_accepted_event_attributes") for e in history.events)


async def test_a_send_with_no_argument_is_refused_saying_so(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(_session_agent())
        refused = await _refusal(stalwart.temporal.get_workflow_handle(session.run_id), "send")
    assert refused.message.endswith("it got no argument")


async def test_an_approval_that_is_not_a_decision_is_refused_naming_its_fields_and_the_call_still_waits(
    stalwart, worker_with
):
    agent = AgentSpec(
        name="careful",
        tools=["calculator"],
        require_approval=["calculator"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "1+1"})]),
            ScriptedReply(text="2"),
        ],
    )
    async with worker_with():
        run = await stalwart.start(agent, "add")
        while not (waiting := await run.pending_approvals()):
            await asyncio.sleep(0.05)
        handle = stalwart.temporal.get_workflow_handle(run.run_id)
        bare_id = await _refusal(handle, "approve", waiting[0].call_id)
        wrong_field = await _refusal(handle, "reject", {"id": waiting[0].call_id})
        still_waiting = await run.pending_approvals()
        await run.approve(waiting[0].call_id)
        result = await run.result()
    assert DECISION_SHAPE in bare_id.message and f'it got "{waiting[0].call_id}"' in bare_id.message
    assert DECISION_SHAPE in wrong_field.message and "call_id: Field required" in wrong_field.message
    assert [w.call_id for w in still_waiting] == [waiting[0].call_id]
    assert result.answer == "2"


async def test_a_message_signal_that_is_not_text_is_dropped_with_a_log_line_naming_the_shape(
    stalwart, worker_with, caplog
):
    async with worker_with():
        session = await stalwart.start_session(_session_agent())
        with caplog.at_level(logging.WARNING):
            await stalwart.temporal.get_workflow_handle(session.run_id).signal("message", {"text": "hello"})
            answered = await session.send("hello")  # the session goes on: the next message is answered
    assert answered.answer == "heard you"
    assert [s.content for s in answered.steps] == ["hello", "heard you"]
    ignored = [r.getMessage() for r in caplog.records if "message signal ignored" in r.getMessage()]
    assert len(ignored) == 1 and f"`message` {MESSAGE_SHAPE}" in ignored[0] and '{"text":"hello"}' in ignored[0]
