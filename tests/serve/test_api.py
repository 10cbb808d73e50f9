"""The HTTP API of `stalwart serve`, end to end: a real dev server, a worker, uvicorn on a loopback port, httpx."""

from __future__ import annotations

import asyncio

import pytest
from serve_agents import ANSWER, chatter, gated_calculator, writer

from stalwart.client.serve.app import ServeSettings

from support.serve_api import Served, events, open_session, served

pytestmark = pytest.mark.slow


async def _until_pending(http, run_id: str) -> list[dict]:
    while not (pending := (await http.get(f"/api/runs/{run_id}/approvals")).json()["pending"]):
        await asyncio.sleep(0.05)
    return pending


async def test_a_message_sent_to_a_session_streams_its_answer_word_by_word(server: Served, wire, opened):
    spec, _ = writer(wire, ANSWER)
    async with server.client() as http:
        session_id = await open_session(http, spec, opened)
        sent = await http.post(f"/api/sessions/{session_id}/messages", json={"message": "What is 17*23+4?"})
        assert sent.status_code == 202, sent.text
        async with events(http, session_id) as stream:
            seen, final = await stream.until("step", lambda d: d["record"]["role"] == "assistant")
    deltas = [e.data["text"] for e in seen if e.kind == "delta"]
    assert "".join(deltas) == ANSWER == final.data["record"]["content"]
    assert len(deltas) > 3, "the answer came whole, not as it was written"
    assert [e.data["record"]["content"] for e in seen if e.kind == "step"] == ["What is 17*23+4?", ANSWER]


async def test_a_stream_resumed_from_its_last_event_id_sends_exactly_the_text_it_missed(server: Served, wire, opened):
    spec, _ = writer(wire, ANSWER)
    async with server.client() as http:
        session_id = await open_session(http, spec, opened)
        await http.post(f"/api/sessions/{session_id}/messages", json={"message": "go"})
        async with events(http, session_id) as stream:
            first = [await stream.next()]
            while len([e for e in first if e.kind == "delta"]) < 2:
                first.append(await stream.next())
        last_id = first[-1].id
        await asyncio.sleep(0.5)  # words are written meanwhile, which the resumed stream must still send
        async with events(http, session_id, last_event_id=last_id) as stream:
            rest, _ = await stream.until("step", lambda d: d["record"]["role"] == "assistant")
    before = "".join(e.data["text"] for e in first if e.kind == "delta")
    after = "".join(e.data["text"] for e in rest if e.kind == "delta")
    assert before + after == ANSWER, f"{before!r} + {after!r}"
    assert not [e for e in rest if e.kind == "step" and e.data["record"]["role"] == "user"], "the message came again"


async def test_a_new_subscriber_is_sent_the_whole_conversation_from_the_start(server: Served, opened):
    async with server.client() as http:
        session_id = await open_session(http, chatter("first answer", "second answer"), opened)
        for message in ("hello", "again"):
            waited = await http.post(f"/api/sessions/{session_id}/messages", json={"message": message, "wait": True})
            assert waited.status_code == 200 and waited.json()["stop_reason"] == "done", waited.text
        async with events(http, session_id) as stream:
            seen, _ = await stream.until("step", lambda d: d["index"] == 3)
    assert [e.data["record"]["content"] for e in seen if e.kind == "step"] == [
        "hello",
        "first answer",
        "again",
        "second answer",
    ]
    ids = [str(e.id) for e in seen if e.kind == "step"]
    assert [i.split(".")[1] for i in ids] == ["1-0", "2-0", "3-0", "4-0"]
    assert len({i.split(".")[0] for i in ids}) == 1, "each offset names the run, the same for all"


async def test_a_runs_approval_is_listed_and_approved_and_the_run_goes_on(server: Served, opened):
    async with server.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": gated_calculator(), "goal": "What is 17*23+4?"})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        opened.append(run_id)
        [pending] = await _until_pending(http, run_id)
        assert (pending["tool_name"], pending["arguments"]) == ("calculator", {"expression": "17*23+4"})
        inbox = (await http.get("/api/approvals")).json()["runs"]
        assert [p["call_id"] for r in inbox if r["run_id"] == run_id for p in r["pending"]] == [pending["call_id"]]
        decided = await http.post(f"/api/runs/{run_id}/approvals/{pending['call_id']}/approve", json={})
        assert decided.status_code == 200, decided.text
        async with events(http, run_id) as stream:
            seen, end = await stream.until("end")
        result = (await http.get(f"/api/runs/{run_id}/result")).json()
    assert result["answer"] == "It is 395." and result["stop_reason"] == "done"
    [tool] = [e.data["record"] for e in seen if e.kind == "step" and e.data["record"]["role"] == "tool"]
    assert tool["result"] == "395"
    assert end.data["status"] == "done"


async def test_a_rejection_needs_a_reason_and_the_model_reads_it(server: Served, opened):
    async with server.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": gated_calculator("I may not."), "goal": "17*23+4?"})
        run_id = started.json()["run_id"]
        opened.append(run_id)
        [pending] = await _until_pending(http, run_id)
        url = f"/api/runs/{run_id}/approvals/{pending['call_id']}/reject"
        bare = await http.post(url, json={})
        assert bare.status_code == 400 and bare.json()["error"]["code"] == "reason_required"
        rejected = await http.post(url, json={"reason": "not today", "reviewer": "ops"})
        assert rejected.status_code == 200, rejected.text
        async with events(http, run_id) as stream:
            seen, _ = await stream.until("end")
    [tool] = [e.data["record"] for e in seen if e.kind == "step" and e.data["record"]["role"] == "tool"]
    assert "not today" in (tool["result"] or "") + (tool["error"] or "")


async def _decided_in_a_session(http, opened: list[str], path: str, body: dict) -> tuple[str, str]:
    """A session's gated call decided (`path`: approve or reject, with `body`), its turn over and the session still
    open: the session and the call's id."""
    session_id = await open_session(http, gated_calculator(), opened)
    await http.post(f"/api/sessions/{session_id}/messages", json={"message": "17*23+4?"})
    [pending] = await _until_pending(http, session_id)
    decided = await http.post(f"/api/runs/{session_id}/approvals/{pending['call_id']}/{path}", json=body)
    assert decided.status_code == 200, decided.text
    async with events(http, session_id) as stream:
        await stream.until("step", lambda d: d["record"]["role"] == "assistant" and d["record"]["final"])
    return session_id, pending["call_id"]


async def test_a_second_approval_of_a_call_is_refused_409_saying_it_was_approved_already(server: Served, opened):
    async with server.client() as http:
        session_id, call_id = await _decided_in_a_session(http, opened, "approve", {"reviewer": "ops"})
        again = await http.post(f"/api/runs/{session_id}/approvals/{call_id}/approve", json={})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["code"] == "already_decided"
    assert f"tool call {call_id!r} of run {session_id} has been approved by ops already" in again.text


async def test_an_approval_of_a_rejected_call_is_refused_409_saying_who_rejected_it_and_why(server: Served, opened):
    async with server.client() as http:
        rejection = {"reason": "not today", "reviewer": "ops"}
        session_id, call_id = await _decided_in_a_session(http, opened, "reject", rejection)
        again = await http.post(f"/api/runs/{session_id}/approvals/{call_id}/approve", json={})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["code"] == "already_decided"
    assert "has been rejected by ops (not today) already" in again.text


async def test_a_decision_on_a_call_no_run_made_is_still_refused_404(server: Served, opened):
    async with server.client() as http:
        session_id, _ = await _decided_in_a_session(http, opened, "approve", {})
        unknown = await http.post(f"/api/runs/{session_id}/approvals/call_never_made/approve", json={})
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["error"]["code"] == "no_such_call"


async def test_the_step_log_and_the_result_of_a_finished_run_are_read(server: Served, opened):
    async with server.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": chatter("done it"), "goal": "do it"})
        run_id = started.json()["run_id"]
        async with events(http, run_id) as stream:
            await stream.until("end")
        state = (await http.get(f"/api/runs/{run_id}")).json()
        result = (await http.get(f"/api/runs/{run_id}/result")).json()
        listed = (await http.get("/api/runs")).json()["runs"]
    assert [s["content"] for s in state["steps"]] == ["do it", "done it"] and state["status"] == "done"
    assert state["ui_url"].endswith(f"/workflows/{run_id}")
    assert result["answer"] == "done it" and result["run_id"] == run_id
    assert run_id in [r["run_id"] for r in listed]


async def test_the_result_of_a_running_session_is_refused_with_the_reason(server: Served, opened):
    async with server.client() as http:
        session_id = await open_session(http, chatter("hi"), opened)
        refused = await http.get(f"/api/runs/{session_id}/result")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "running" and session_id in refused.json()["error"]["message"]


async def test_the_openapi_document_describes_every_api_route(server: Served):
    async with server.client() as http:
        document = (await http.get("/api/openapi.json")).json()
    described = {(path, method.upper()) for path, ops in document["paths"].items() for method in ops}
    assert ("/api/runs/{run_id}/events", "GET") in described
    assert ("/api/sessions/{run_id}/messages", "POST") in described
    assert ("/api/runs/{run_id}/approvals/{call_id}/reject", "POST") in described
    body = document["paths"]["/api/sessions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "agent_spec" in body["properties"]


async def test_offsets_run_on_across_continue_as_new_and_a_stream_resumes_past_it(server: Served, opened):
    replies = [f"answer {n}" for n in range(8)]
    spec = {**chatter(*replies), "session": {"continue_as_new_events": 20}}
    async with server.client() as http:
        session_id = await open_session(http, spec, opened)
        for n in range(8):
            sent = await http.post(f"/api/sessions/{session_id}/messages", json={"message": f"q{n}", "wait": True})
            assert sent.status_code == 200, sent.text
        async with events(http, session_id) as stream:
            whole, _ = await stream.until("step", lambda d: d["index"] == 15)
        [ninth] = [e.id for e in whole if e.kind == "step" and e.data["index"] == 8]  # names the run: one chain
        async with events(http, session_id, last_event_id=ninth) as stream:
            rest, _ = await stream.until("step", lambda d: d["index"] == 15)
    assert len(await server.feed.client.get(session_id).histories()) >= 2, "the session did not continue as new"
    contents = [e.data["record"]["content"] for e in whole if e.kind == "step"]
    assert contents == [text for n in range(8) for text in (f"q{n}", f"answer {n}")]
    assert [e.data["index"] for e in rest if e.kind == "step"] == list(range(9, 16))
    assert not [e for e in rest if e.kind == "reset"], "the chain's runs were taken for runs of a reused id"


async def test_a_session_starts_from_an_agent_file_named_relative_to_the_agents_folder(
    stalwart_client, worker, opened, tmp_path
):
    (tmp_path / "chatter.toml").write_text('name = "chatter"\nmodel = "scripted"\n\n[[scripted]]\ntext = "hello"\n')
    async with served(stalwart_client, ServeSettings(agents_dir=tmp_path)) as server, server.client() as http:
        started = await http.post("/api/sessions", json={"agent": "chatter.toml"})
        assert started.status_code == 201, started.text
        session_id = started.json()["session_id"]
        opened.append(session_id)
        answer = await http.post(f"/api/sessions/{session_id}/messages", json={"message": "hi", "wait": True})
    assert answer.json()["answer"] == "hello"


async def test_the_state_event_shows_every_budget_the_run_uses_up_among_its_limits(server: Served):
    budgets = {"max_steps": 7, "max_seconds": 300, "max_tokens": 5000, "max_cost_usd": 0.5}
    async with server.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": {**chatter("ok"), "budgets": budgets}, "goal": "go"})
        assert started.status_code == 201, started.text
        async with events(http, started.json()["run_id"]) as stream:
            _, state = await stream.until("state", lambda d: d.get("limits"))
    assert state.data["limits"] == budgets
