"""Run ids: an open run's id never names another run (409 `exists` from `stalwart serve`, `RunExists` from the
Python API); a closed run's names the new run, as Temporal reuses ids, unless the caller says not to (`reuse_id`
false), for a client that follows runs by their id and must never be handed another."""

from __future__ import annotations

from uuid import uuid4

import pytest
from serve_agents import chatter, gated_calculator
from temporalio.exceptions import WorkflowAlreadyStartedError

from stalwart.client.api import RunExists, StalwartClient
from stalwart.client.serve.app import StartRun
from stalwart.contracts.agent import AgentSpec

from support.serve_api import Served


async def _finished(http, stalwart: StalwartClient, run_id: str, answer: str) -> None:
    started = await http.post("/api/runs", json={"agent_spec": chatter(answer), "goal": "go", "run_id": run_id})
    assert started.status_code == 201, started.text
    assert (await stalwart.get(run_id).result()).answer == answer


async def test_serve_refuses_a_closed_runs_id_when_told_not_to_reuse_it_and_the_closed_run_stays_what_it_reads(
    server: Served, stalwart_client: StalwartClient
):
    run_id = f"closed-{uuid4().hex[:8]}"
    async with server.client() as http:
        await _finished(http, stalwart_client, run_id, "the first")
        again = await http.post(
            "/api/runs", json={"agent_spec": chatter("the second"), "goal": "go", "run_id": run_id, "reuse_id": False}
        )
        state = await http.get(f"/api/runs/{run_id}")
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert error["code"] == "exists"
    assert f'a run with id {run_id} has closed, and "reuse_id": false keeps its id' in error["message"]
    assert "choose a new run_id, or leave it out" in error["message"]
    assert state.json()["answer"] == "the first"


async def test_serve_starts_a_new_run_under_a_closed_runs_id_as_temporal_reuses_ids(
    server: Served, stalwart_client: StalwartClient
):
    run_id = f"reused-{uuid4().hex[:8]}"
    async with server.client() as http:
        await _finished(http, stalwart_client, run_id, "the first")
        again = await http.post("/api/runs", json={"agent_spec": chatter("the second"), "goal": "go", "run_id": run_id})
    assert again.status_code == 201, again.text
    assert (await stalwart_client.get(run_id).result()).answer == "the second"


async def test_serve_refuses_a_run_under_the_id_of_an_open_run_even_when_asked_to_reuse_it(server: Served, opened):
    run_id = f"open-{uuid4().hex[:8]}"
    async with server.client() as http:
        first = await http.post("/api/runs", json={"agent_spec": gated_calculator(), "goal": "go", "run_id": run_id})
        assert first.status_code == 201, first.text
        opened.append(run_id)
        again = await http.post(
            "/api/runs", json={"agent_spec": chatter("no"), "goal": "go", "run_id": run_id, "reuse_id": True}
        )
    assert again.status_code == 409, again.text
    assert again.json()["error"] == {
        "code": "exists",
        "message": f"run {run_id} is running already: choose a new run_id, or leave it out for a fresh one",
    }


async def test_the_python_api_reuses_a_closed_runs_id_unless_told_not_to_and_never_an_open_runs(
    stalwart_client: StalwartClient, worker: None, opened
):
    closed_id, open_id = f"closed-{uuid4().hex[:8]}", f"open-{uuid4().hex[:8]}"
    first = await stalwart_client.start(AgentSpec.model_validate(chatter("the first")), "go", run_id=closed_id)
    await first.result()
    with pytest.raises(RunExists) as refused:
        await stalwart_client.start(
            AgentSpec.model_validate(chatter("the second")), "go", run_id=closed_id, reuse_id=False
        )
    assert refused.value.closed and isinstance(refused.value, WorkflowAlreadyStartedError)
    assert f"a run with id {closed_id} has closed (done), and reuse_id=False keeps its id" in str(refused.value)
    again = await stalwart_client.start(AgentSpec.model_validate(chatter("the second")), "go", run_id=closed_id)
    assert (await again.result()).answer == "the second"

    waiting = await stalwart_client.start(AgentSpec.model_validate(gated_calculator()), "go", run_id=open_id)
    opened.append(waiting.run_id)
    with pytest.raises(RunExists) as refused:
        await stalwart_client.start(AgentSpec.model_validate(chatter("no")), "go", run_id=open_id, reuse_id=True)
    assert not refused.value.closed and f"run {open_id} is running already" in str(refused.value)


async def test_run_exists_says_how_the_closed_run_ended_as_the_command_line_does_not_temporals_completed(
    stalwart_client: StalwartClient, worker: None
):
    calculating = {**gated_calculator(), "require_approval": [], "budgets": {"max_steps": 1}}
    stopped = await stalwart_client.start(AgentSpec.model_validate(calculating), "go")  # stopped after its tool call
    assert (await stopped.result()).stop_reason == "max_steps"
    with pytest.raises(RunExists) as refused:
        await stalwart_client.start(
            AgentSpec.model_validate(chatter("no")), "go", run_id=stopped.run_id, reuse_id=False
        )
    assert f"a run with id {stopped.run_id} has closed (max_steps), and" in str(refused.value)


def test_the_run_id_field_says_a_closed_runs_id_names_the_new_run_unless_reuse_id_is_false():
    described = StartRun.model_fields["run_id"].description or ""
    assert "closed run's unless reuse_id is false" in described and "no run has" not in described
