"""Typed output in the loop: an answer that does not validate goes back to the model, a valid one is the output."""

from __future__ import annotations

import json

from pydantic import BaseModel

from stalwart.contracts.agent import AgentSpec, OutputSpec, ScriptedReply, ScriptedToolCall


class Refund(BaseModel):
    order_id: str
    amount: float


def refunder(*texts: str, retries: int = 2, tool_first: bool = False) -> AgentSpec:
    replies = [ScriptedReply(text=text) for text in texts]
    if tool_first:
        replies.insert(0, ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "order 7"})]))
    return AgentSpec(
        name="refunder",
        tools=["echo"],
        scripted=replies,
        output=OutputSpec.for_type(Refund, retries=retries),
    )


VALID = '{"order_id": "7", "amount": 12.5}'


async def test_a_valid_answer_is_the_output(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(refunder(VALID), "refund order 7")
    assert (result.stop_reason, result.output, result.answer) == ("done", {"order_id": "7", "amount": 12.5}, VALID)
    assert result.output_as(Refund) == Refund(order_id="7", amount=12.5)


async def test_the_model_may_call_tools_before_its_answer(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(refunder(VALID, tool_first=True), "refund order 7")
    assert result.stop_reason == "done"
    assert [s.role for s in result.steps] == ["user", "assistant", "tool", "assistant"]
    assert result.output == {"order_id": "7", "amount": 12.5}


async def test_an_invalid_answer_is_sent_back_with_the_errors_then_a_valid_one_ends_the_run(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(refunder('{"order_id": 7}', VALID), "refund order 7")
        result = await handle.result()
        model_input = await handle.model_input(2)
    assert (result.stop_reason, result.output) == ("done", {"order_id": "7", "amount": 12.5})
    assert [s.role for s in result.steps] == ["user", "assistant", "assistant"]
    told = model_input.messages[-1]
    assert told.role == "user" and "not the output asked for" in told.content
    assert "`$.order_id`: expected string, got a number 7" in told.content
    assert "missing required property amount" in told.content


async def test_the_step_log_says_why_an_answer_was_refused(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(refunder('{"order_id": 7, "amount": 1}', VALID), "refund order 7")
        result = await handle.result()
        events = await handle.events()
    refused = result.steps[1]
    assert (refused.role, refused.final) == ("assistant", False)
    assert refused.error == "the answer does not fit [output]:\n- `$.order_id`: expected string, got a number 7"
    assert [event.event_type for event in events] == ["user_message", "error", "agent_response"]


async def test_an_answer_that_is_not_json_is_retried(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(refunder("Sure, I'll refund it.", VALID), "refund order 7")
    assert (result.stop_reason, result.output) == ("done", {"order_id": "7", "amount": 12.5})


async def test_a_fenced_json_answer_is_read(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(refunder(f"```json\n{VALID}\n```"), "refund order 7")
    assert result.output == {"order_id": "7", "amount": 12.5}


async def test_an_answer_invalid_every_time_ends_the_run_in_error_keeping_the_last_answer(stalwart, worker_with):
    bad = '{"order_id": "7", "amount": "lots"}'
    async with worker_with():
        result = await stalwart.run(refunder(bad, bad, retries=1), "refund order 7")
    assert (result.stop_reason, result.output, result.answer) == ("error", None, bad)
    assert result.error is not None
    assert "did not validate against the agent's [output] schema after 2 tries" in result.error
    assert '`$.amount`: expected number, got a string "lots"' in result.error
    assert sum(s.role == "assistant" for s in result.steps) == 2


async def test_no_retries_ends_at_the_first_invalid_answer(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(refunder("[]", retries=0), "refund order 7")
    assert (result.stop_reason, result.answer) == ("error", "[]")
    assert "after 1 try" in (result.error or "")


async def test_an_answer_over_the_message_limit_is_no_output(stalwart, worker_with):
    spec = refunder(json.dumps({"order_id": "7" * 200, "amount": 1}), retries=0)
    spec = spec.model_copy(update={"session": spec.session.model_copy(update={"max_message_chars": 100})})
    async with worker_with():
        result = await stalwart.run(spec, "refund order 7")
    assert result.stop_reason == "error"
    assert "[session] max_message_chars" in (result.error or "")


async def test_a_non_object_output_type_is_validated_too(stalwart, worker_with):
    spec = AgentSpec(name="lister", scripted=[ScriptedReply(text='["a", 2]'), ScriptedReply(text="[1, 2]")])
    spec = spec.model_copy(update={"output": OutputSpec.for_type(list[int])})
    async with worker_with():
        result = await stalwart.run(spec, "count")
    assert (result.stop_reason, result.output) == ("done", [1, 2])


async def test_retries_spent_before_continue_as_new_stay_spent_after_it(stalwart, worker_with):
    echo = ScriptedReply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "x"})])
    bad = ScriptedReply(text='{"order_id": "7"}')
    spec = refunder(retries=1)
    spec = spec.model_copy(
        update={
            "scripted": [bad, echo, echo, echo, echo, bad, ScriptedReply(text=VALID)],
            "session": spec.session.model_copy(update={"continue_as_new_events": 20}),
            "thrash_guard": False,
        }
    )
    async with worker_with():
        handle = await stalwart.start(spec, "refund order 7")
        result = await handle.result()
        runs = len(await handle.histories())
    assert runs > 1
    assert (result.stop_reason, result.answer) == ("error", '{"order_id": "7"}')
    assert "after 2 tries" in (result.error or "")
