"""An offset the run cannot have reached (the last offset of an earlier run whose id was reused, or one past the end
of the log) is not taken at its word: the stream says `reset`, then sends the run from its start, so the client ends
up holding exactly the run's log, and not the `end` of a run with none of its steps."""

from __future__ import annotations

from uuid import uuid4

import pytest
from serve_agents import chatter

from support.serve_api import Event, Served, events

pytestmark = pytest.mark.slow

CALCULATING = {
    "name": "calculating",
    "model": "scripted",
    "tools": ["calculator"],
    "scripted": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17*23+4"}}]},
        {"text": "It is 395."},
    ],
}
"""Four records (the goal, a turn calling the calculator, its result, the answer): more than a plain answer's two."""


async def _run_to_its_end(http, run_id: str, last_event_id: str | None = None) -> list[Event]:
    async with events(http, run_id, last_event_id=last_event_id) as stream:
        seen, _ = await stream.until("end")
    return seen


def _log(seen: list[Event]) -> list[str]:
    return [e.kind if e.kind != "step" else f"step {e.data['index']}" for e in seen if e.kind in ("reset", "step")]


async def test_a_stream_resumed_from_an_earlier_runs_last_offset_is_reset_and_sent_the_new_run_whole(server: Served):
    run_id = f"reused-{uuid4().hex[:8]}"
    async with server.client() as http:
        first = await http.post("/api/runs", json={"agent_spec": chatter("first"), "goal": "one", "run_id": run_id})
        assert first.status_code == 201, first.text
        held = await _run_to_its_end(http, run_id)
        again = await http.post("/api/runs", json={"agent_spec": CALCULATING, "goal": "two", "run_id": run_id})
        assert again.status_code == 201, again.text
        resumed = await _run_to_its_end(http, run_id, last_event_id=held[-1].id)
    assert _log(held) == ["step 0", "step 1"]
    assert _log(resumed) == ["reset", "step 0", "step 1", "step 2", "step 3"]
    [reset] = [e for e in resumed if e.kind == "reset"]
    assert reset.data["offset"] == held[-1].id and "earlier run" in reset.data["reason"]
    assert reset.id is not None and reset.id.endswith(".0-0") and reset.id.split(".")[0] != held[-1].id.split(".")[0]


async def test_a_stream_resumed_from_an_offset_past_the_end_of_the_log_is_reset_and_sent_the_run_whole(
    server: Served,
):
    async with server.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": CALCULATING, "goal": "two"})
        run_id = started.json()["run_id"]
        whole = await _run_to_its_end(http, run_id)
        resumed = await _run_to_its_end(http, run_id, last_event_id="999-0")
    assert _log(resumed) == ["reset", *_log(whole)] == ["reset", "step 0", "step 1", "step 2", "step 3"]
    assert [e.id for e in resumed if e.kind == "step"] == [e.id for e in whole if e.kind == "step"]
    assert resumed[-1].kind == "end" and resumed[-1].data["status"] == "done"
