"""Approval-gated tools on the time-skipping server: approve, reject, time out, refuse unknown calls."""

from __future__ import annotations

import asyncio
import json

import pytest
from temporalio.client import WorkflowUpdateFailedError

from stalwart.activities.tools import tool
from stalwart.client.api import DecisionRefused
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.errors import StalwartError

from support.approvals import until_pending

transfers: list[int] = []


@pytest.fixture(scope="module")
def time_skipping_env(isolated_time_skipping_env):
    """A server of this module's own: its tests need workflow time to pass (see tests/conftest.py)."""
    return isolated_time_skipping_env


@tool(side_effecting=True, requires_approval=True)
def transfer_money(amount: int) -> str:
    """Move money; a person must approve every call.

    Args:
        amount: Dollars to move.
    """
    transfers.append(amount)
    return f"transferred ${amount}"


def banker(**overrides: object) -> AgentSpec:
    return AgentSpec(
        name="banker",
        tools=["transfer_money"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="transfer_money", arguments={"amount": 100}, id="pay")]),
            ScriptedReply(text="Finished."),
        ],
        **overrides,
    )


async def test_a_gated_call_waits_with_status_awaiting_approval_and_lists_its_arguments(stalwart, worker_with):
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        pending = await until_pending(handle)
        state = await handle.state()
        await handle.reject("pay", reason="test over")
        await handle.result()
    assert [(p.call_id, p.tool_name, p.arguments) for p in pending] == [("pay", "transfer_money", {"amount": 100})]
    assert state.status == "awaiting_approval"


async def test_an_approved_call_runs_and_the_run_continues(stalwart, worker_with):
    transfers.clear()
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        await until_pending(handle)
        await handle.approve("pay", reviewer="alice")
        result = await handle.result()
    assert transfers == [100]
    assert result.steps[2].result == "transferred $100"
    assert result.stop_reason == "done"


async def test_a_rejected_call_does_not_run_and_the_model_reads_the_reason(stalwart, worker_with):
    transfers.clear()
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        await until_pending(handle)
        await handle.reject("pay", reason="over the limit", reviewer="bob")
        result = await handle.result()
    assert transfers == []
    assert json.loads(result.steps[2].error)["error"] == "Rejected by bob: over the limit"
    assert result.answer == "Finished."


async def test_a_call_nobody_decides_on_is_rejected_after_a_day_of_workflow_time(stalwart, worker_with):
    transfers.clear()
    async with worker_with(transfer_money):
        result = await stalwart.run(banker(), "pay")
    assert transfers == []
    assert "nobody approved this call within 86400 seconds" in result.steps[2].error
    assert (result.steps[2].ended_at - result.steps[2].started_at).total_seconds() >= 86400


async def test_approving_an_unknown_call_id_is_refused(stalwart, worker_with):
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        await until_pending(handle)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.approve("no-such-call")
        await handle.reject("pay", reason="cleanup")
        await handle.result()
    assert "no tool call 'no-such-call' is waiting" in str(refused.value.cause)
    assert isinstance(refused.value, DecisionRefused) and isinstance(refused.value, StalwartError)
    assert "no tool call 'no-such-call' is waiting" in str(refused.value)


async def test_a_second_decision_on_one_call_is_refused_saying_it_was_decided(stalwart, worker_with):
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        await until_pending(handle)
        await handle.reject("pay", reason="no")
        with pytest.raises(DecisionRefused) as refused:
            await handle.approve("pay")
        await handle.result()
    assert "tool call 'pay' of run" in str(refused.value) and "has been rejected (no) already" in str(refused.value)
    assert refused.value.decided is not None and refused.value.decided.how == "rejected" and transfers == []


async def test_deciding_on_or_cancelling_a_run_that_has_ended_says_it_has_ended(stalwart, worker_with):
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        await until_pending(handle)
        await handle.reject("pay", reason="no")
        await handle.result()
        with pytest.raises(DecisionRefused) as refused:
            await handle.approve("pay")
        cancelled = await handle.cancel()
    assert f"run {handle.run_id} has ended, so none of its calls waits for a decision" in str(refused.value)
    assert cancelled is False


async def test_a_decision_whose_reason_is_too_long_to_record_is_refused_and_the_call_still_waits(stalwart, worker_with):
    """Accepted, a 3 MB reason failed the workflow task over and over (the error over Temporal's limit)."""
    from stalwart.contracts.approvals import MAX_REASON_CHARS

    transfers.clear()
    async with worker_with(transfer_money):
        handle = await stalwart.start(banker(), "pay")
        await until_pending(handle)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.reject("pay", reason="x" * (MAX_REASON_CHARS + 1))
        assert [p.call_id for p in await handle.pending_approvals()] == ["pay"]
        await handle.reject("pay", reason="over the limit")
        result = await handle.result()
    assert f"over {MAX_REASON_CHARS:,}: shorten it" in str(refused.value.cause)
    assert transfers == [] and result.answer == "Finished."


async def test_agent_file_can_require_approval_for_a_tool_not_marked_in_code(stalwart, worker_with):
    spec = AgentSpec(
        name="careful",
        tools=["calculator"],
        require_approval=["calculator"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "1+1"}, id="c")]),
            ScriptedReply(text="2"),
        ],
    )
    async with worker_with():
        handle = await stalwart.start(spec, "add")
        pending = await until_pending(handle)
        await handle.approve("c")
        result = await handle.result()
    assert pending[0].tool_name == "calculator"
    assert result.steps[2].result == "2"


def paying(*amounts_by_turn: tuple[int, ...]) -> AgentSpec:
    """A banker whose every transfer call has the id `pay`, one turn per tuple of amounts."""
    turns = [
        ScriptedReply(
            tool_calls=[ScriptedToolCall(name="transfer_money", arguments={"amount": a}, id="pay") for a in amounts]
        )
        for amounts in amounts_by_turn
    ]
    return AgentSpec(name="banker", tools=["transfer_money"], scripted=[*turns, ScriptedReply(text="Finished.")])


async def _until_pending_amount(handle, amount: int) -> None:
    """Until a call moving `amount` waits for approval, or the run has ended
    (so a call that ran unapproved fails the test)."""
    while not any(p.arguments == {"amount": amount} for p in await handle.pending_approvals()):
        if (await handle.state()).status not in ("running", "awaiting_approval"):
            return
        await asyncio.sleep(0.05)


async def test_an_approval_is_spent_on_its_call_and_a_later_call_with_the_same_id_waits_again(stalwart, worker_with):
    transfers.clear()
    async with worker_with(transfer_money):
        handle = await stalwart.start(paying((100,), (200,)), "pay twice")
        await _until_pending_amount(handle, 100)
        await handle.approve("pay")
        await _until_pending_amount(handle, 200)
        await handle.reject("pay", reason="once is enough")
        result = await handle.result()
    assert transfers == [100]
    assert json.loads(result.steps[4].error)["error"] == "Rejected by a reviewer: once is enough"


async def test_a_second_call_with_the_id_of_a_waiting_one_is_not_run(stalwart, worker_with):
    transfers.clear()
    async with worker_with(transfer_money):
        handle = await stalwart.start(paying((1, 2)), "pay both")
        await _until_pending_amount(handle, 1)
        await handle.approve("pay")
        result = await handle.result()
    assert transfers == [1]
    assert (result.steps[2].result, result.stop_reason) == ("transferred $1", "done")
    assert "another call with id 'pay' is already waiting for approval" in result.steps[3].error


def test_a_second_decision_on_a_call_decided_in_the_same_workflow_task_says_it_was_decided():
    # Two decisions that reach the run in one workflow task: the second met a call still listed as waiting, and was
    # refused as "no tool call 'pay' is waiting ... (waiting: pay)".
    from datetime import UTC, datetime

    from temporalio.exceptions import ApplicationError

    from stalwart.contracts.approvals import ApprovalDecision, PendingApproval
    from stalwart.workflows.approvals import ApprovalGate

    gate = ApprovalGate(AgentSpec(name="a"), on_change=lambda waiting: None)
    now = datetime.now(UTC)
    gate.pending["pay"] = PendingApproval(call_id="pay", tool_name="pay", step=1, requested_at=now, expires_at=now)
    gate.require_pending(ApprovalDecision(call_id="pay"))
    gate.decide(True, ApprovalDecision(call_id="pay"))
    with pytest.raises(ApplicationError, match="'pay' has been approved already"):
        gate.require_pending(ApprovalDecision(call_id="pay", reason="no"))
    with pytest.raises(ApplicationError, match=r"no tool call 'other' is waiting .*\(waiting: none\)"):
        gate.require_pending(ApprovalDecision(call_id="other"))
