"""Typed output as Python callers get it: an instance of their type, per run and per session turn."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from stalwart.contracts.agent import AgentSpec, ScriptedReply


class Refund(BaseModel):
    order_id: str
    amount: float


@dataclass
class Verdict:
    approve: bool


def agent(*texts: str, output: object = Refund) -> AgentSpec:
    return AgentSpec(name="refunder", scripted=[ScriptedReply(text=text) for text in texts], output=output)


async def test_result_with_an_output_type_gives_an_instance_of_it(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(agent('{"order_id": "7", "amount": 12.5}'), "refund order 7")
        result = await handle.result(output_type=Refund)
    assert result.output == Refund(order_id="7", amount=12.5)


async def test_run_takes_an_output_type_too(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(agent('{"approve": true}', output=Verdict), "judge", output_type=Verdict)
    assert result.output == Verdict(approve=True)


async def test_a_run_without_output_gives_none_whatever_the_type(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(agent('{"order_id": 7}', '{"order_id": 8}', '"no"'), "refund", output_type=Refund)
    assert (result.stop_reason, result.output) == ("error", None)


async def test_each_session_turn_has_its_own_output(stalwart, worker_with):
    spec = agent('{"order_id": "1", "amount": 1}', "not json", '{"order_id": "2", "amount": 2}')
    async with worker_with():
        session = await stalwart.start_session(spec)
        first = await session.send("refund order 1", output_type=Refund)
        second = await session.send("refund order 2", output_type=Refund)
        closed = await session.close()
    assert first.output == Refund(order_id="1", amount=1)
    assert (second.stop_reason, second.output) == ("done", Refund(order_id="2", amount=2))
    assert [s.role for s in second.steps] == ["user", "assistant", "assistant"]
    assert (second.steps[1].error or "").startswith("the answer does not fit [output]")
    assert closed.output == {"order_id": "2", "amount": 2}


async def test_the_runs_state_shows_its_output_live_and_once_closed(stalwart, worker_with):
    async with worker_with():
        session = await stalwart.start_session(agent('{"order_id": "7", "amount": 12.5}'))
        await session.send("refund order 7")
        live = await session.state()  # the session is open: its worker answers the query
        await session.close()
        closed = await session.state()  # read from the closed run's result
    assert live.status == "waiting"
    assert live.output == closed.output == {"order_id": "7", "amount": 12.5}


async def test_the_clients_send_takes_an_output_type_and_starts_the_session_with_it(stalwart, worker_with):
    spec = agent('{"order_id": "1", "amount": 1}', '{"order_id": "2", "amount": 2}')
    async with worker_with():
        first = await stalwart.send("refunds-session", "refund order 1", agent=spec, output_type=Refund)
        second = await stalwart.send("refunds-session", "refund order 2", output_type=Refund)
        await stalwart.session("refunds-session").close()
    assert (first.output, second.output) == (Refund(order_id="1", amount=1), Refund(order_id="2", amount=2))
