"""What `stalwart serve` refuses, and that it keeps serving: every refusal is a JSON error with its reason."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest
from serve_agents import ANSWER, chatter, gated_calculator, writer

from stalwart.client.serve.app import ServeSettings

from support.serve_api import Served, events, open_session, served

pytestmark = pytest.mark.slow

TOKEN = "s3cret-token-for-tests"
APP_ORIGIN = "https://app.example.com"


@pytest.fixture
async def guarded(stalwart_client, worker) -> Served:
    settings = ServeSettings(token=TOKEN, origins=[APP_ORIGIN])
    async with served(stalwart_client, settings) as running:
        yield running


def _refusal(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"], error
    return str(error["message"])


async def test_a_request_without_the_token_is_refused_401(guarded: Served):
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        response = await http.get("/api/runs")
    assert "Bearer" in _refusal(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_request_with_a_wrong_token_is_refused_401(guarded: Served):
    async with httpx.AsyncClient(base_url=guarded.url, headers={"Authorization": "Bearer wrong"}) as http:
        _refusal(await http.get("/api/runs"), 401, "unauthorized")


async def test_the_right_token_is_let_in(guarded: Served):
    async with guarded.client() as http:
        assert (await http.get("/api/runs")).status_code == 200


async def test_a_page_of_a_foreign_origin_is_refused_403(guarded: Served):
    async with guarded.client(headers={"Origin": "https://evil.example"}) as http:
        message = _refusal(await http.get("/api/runs"), 403, "origin_not_allowed")
        preflight = await http.options("/api/runs", headers={"Access-Control-Request-Method": "POST"})
    assert "https://evil.example" in message
    _refusal(preflight, 403, "origin_not_allowed")


async def test_an_allowed_origin_gets_its_cors_headers(guarded: Served):
    async with guarded.client(headers={"Origin": APP_ORIGIN}) as http:
        response = await http.get("/api/runs")
        preflight = await http.options(
            "/api/runs",
            headers={"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"},
        )
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == APP_ORIGIN
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == APP_ORIGIN


async def test_a_20_mb_message_is_refused_413(guarded: Served, opened):
    async with guarded.client() as http:
        session_id = await open_session(http, chatter("hi"), opened)
        body = json.dumps({"message": "x" * (20 * 1024 * 1024)})
        response = await http.post(
            f"/api/sessions/{session_id}/messages", content=body, headers={"Content-Type": "application/json"}
        )
        assert "limit" in _refusal(response, 413, "body_too_large")
        assert (await http.get(f"/api/runs/{session_id}")).status_code == 200, "the server stopped serving"


async def test_a_body_sent_in_chunks_past_the_limit_is_refused_413(guarded: Served):
    async def chunks():
        for _ in range(40):
            yield b"x" * 65536

    async with guarded.client() as http:
        response = await http.post("/api/sessions", content=chunks(), headers={"Content-Type": "application/json"})
    _refusal(response, 413, "body_too_large")


async def test_malformed_json_is_refused_400(guarded: Served):
    async with guarded.client() as http:
        response = await http.post("/api/runs", content=b'{"goal": "x",', headers={"Content-Type": "application/json"})
    assert "not JSON" in _refusal(response, 400, "malformed_json")


async def test_a_body_of_the_wrong_shape_is_refused_400_naming_the_field(guarded: Served):
    async with guarded.client() as http:
        response = await http.post("/api/runs", json={"agent_spec": chatter("x"), "goal": 5, "colour": "red"})
    message = _refusal(response, 400, "invalid_body")
    assert "goal" in message and "colour" in message


async def test_an_agent_given_both_as_a_file_and_as_a_spec_is_refused_400_saying_to_give_one(guarded: Served):
    both = {"agent": "agents/calculator.toml", "agent_spec": chatter("x")}
    async with guarded.client() as http:
        run = await http.post("/api/runs", json={**both, "goal": "x"})
        session = await http.post("/api/sessions", json=both)
    for response in (run, session):
        assert "not both" in _refusal(response, 400, "agent_twice")


async def test_a_boolean_given_as_text_or_a_number_is_refused_400_naming_the_field(guarded: Served):
    async with guarded.client() as http:
        answers = [
            await http.post("/api/sessions/any-session/messages", json={"message": "hi", "wait": wrong})
            for wrong in ("yes", "true", 1, 0)
        ]
    for response in answers:
        assert "wait" in _refusal(response, 400, "invalid_body")


async def test_an_unknown_id_is_refused_404_naming_it(guarded: Served):
    async with guarded.client() as http:
        answers = [
            await http.get("/api/runs/no-such-run"),
            await http.get("/api/runs/no-such-run/events"),
            await http.get("/api/runs/no-such-run/result"),
            await http.post("/api/sessions/no-such-run/messages", json={"message": "hi"}),
            await http.post("/api/runs/no-such-run/approvals/call_1/approve", json={}),
        ]
    for response in answers:
        assert "no-such-run" in _refusal(response, 404, "not_found")


async def test_a_method_a_route_does_not_serve_is_refused_405(guarded: Served):
    async with guarded.client() as http:
        _refusal(await http.delete("/api/runs"), 405, "method_not_allowed")


async def test_an_offset_that_is_not_one_is_refused_400(guarded: Served, opened):
    async with guarded.client() as http:
        session_id = await open_session(http, chatter("hi"), opened)
        response = await http.get(f"/api/runs/{session_id}/events", headers={"Last-Event-ID": "yesterday"})
    _refusal(response, 400, "bad_offset")


async def test_a_client_leaving_mid_stream_leaves_the_server_serving(server: Served, wire, opened):
    spec, _ = writer(wire, ANSWER)
    async with server.client() as http:
        session_id = await open_session(http, spec, opened)
        await http.post(f"/api/sessions/{session_id}/messages", json={"message": "go"})
        async with events(http, session_id) as stream:
            await stream.until("delta")  # then the connection is dropped mid-answer
    async with server.client() as http:
        assert (await http.get("/api/runs")).status_code == 200
        async with events(http, session_id) as stream:
            seen, final = await stream.until("step", lambda d: d["record"]["role"] == "assistant")
    assert "".join(e.data["text"] for e in seen if e.kind == "delta") == ANSWER


async def test_two_hundred_subscribers_of_one_session_all_get_the_same_events(server: Served, wire, opened):
    spec, _ = writer(wire, ANSWER, pause=0.05)
    limits = httpx.Limits(max_connections=250, max_keepalive_connections=0)
    async with server.client(limits=limits) as http:
        session_id = await open_session(http, spec, opened)
        ready = asyncio.Semaphore(0)

        async def subscriber() -> list[tuple[str | None, str, str]]:
            async with events(http, session_id) as stream:
                ready.release()
                seen, _ = await stream.until("step", lambda d: d["record"]["role"] == "assistant")
            return [(e.id, e.kind, json.dumps(e.data, sort_keys=True)) for e in seen if e.kind in ("step", "delta")]

        tasks = [asyncio.create_task(subscriber()) for _ in range(200)]
        for _ in tasks:
            await ready.acquire()
        await http.post(f"/api/sessions/{session_id}/messages", json={"message": "go"})
        heard = await asyncio.gather(*tasks)
        assert (await http.get("/api/runs")).status_code == 200, "the server stopped serving"
    texts = {"".join(json.loads(data)["text"] for _, kind, data in one if kind == "delta") for one in heard}
    assert texts == {ANSWER}
    assert len({tuple((i, k) for i, k, _ in one if k == "step") for one in heard}) == 1


def test_serve_refuses_a_public_host_without_a_token():
    env = {k: v for k, v in os.environ.items() if k != "STALWART_SERVE_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "stalwart.client.cli", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "STALWART_SERVE_TOKEN" in done.stderr and "--host 127.0.0.1" in done.stderr


async def test_an_agent_file_outside_the_agents_folder_is_refused_403(stalwart_client, worker, tmp_path):
    inside, outside = tmp_path / "agents", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (outside / "agent.toml").write_text('name = "far"\nmodel = "scripted"\n')
    settings = ServeSettings(agents_dir=inside)
    async with served(stalwart_client, settings) as server, server.client() as http:
        for path in (str(outside / "agent.toml"), "../elsewhere/agent.toml"):
            response = await http.post("/api/sessions", json={"agent": path})
            assert "--agents-dir" in _refusal(response, 403, "agent_outside")


async def test_a_message_the_session_refuses_is_refused_409_when_the_request_does_not_wait(guarded: Served, opened):
    spec = {**chatter("one"), "session": {"max_message_chars": 10}}
    async with guarded.client() as http:
        session_id = await open_session(http, spec, opened)
        empty = await http.post(f"/api/sessions/{session_id}/messages", json={"message": "   "})
        too_long = await http.post(f"/api/sessions/{session_id}/messages", json={"message": "eleven char"})
        state = (await http.get(f"/api/runs/{session_id}")).json()
    assert "empty" in _refusal(empty, 409, "message_refused")
    assert "max_message_chars" in _refusal(too_long, 409, "message_refused")
    assert state["steps"] == [] and state["queued"] == 0


async def test_a_message_or_a_close_to_a_run_that_is_not_a_session_is_refused_409(guarded: Served, opened):
    async with guarded.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": gated_calculator(), "goal": "17*23+4?"})
        run_id = started.json()["run_id"]
        opened.append(run_id)
        response = await http.post(f"/api/sessions/{run_id}/messages", json={"message": "hello"})
        closing = await http.post(f"/api/sessions/{run_id}/close")
    assert "not a session" in _refusal(response, 409, "message_refused")
    assert "not a session, so there is nothing to close" in _refusal(closing, 409, "close_refused")


async def test_what_is_sent_to_a_closed_session_is_refused_409_not_404(guarded: Served, dev_env, opened):
    async with guarded.client() as http:
        session_id = await open_session(http, chatter("one"), opened)
        assert (await http.post(f"/api/sessions/{session_id}/close")).status_code == 202
        await dev_env.client.get_workflow_handle(session_id).result()
        message = await http.post(f"/api/sessions/{session_id}/messages", json={"message": "hi"})
        closing = await http.post(f"/api/sessions/{session_id}/close")
        decision = await http.post(f"/api/runs/{session_id}/approvals/call_1/reject", json={"reason": "no"})
    assert "start a new one" in _refusal(message, 409, "session_closed")
    assert "has closed" in _refusal(closing, 409, "closed")
    assert "has closed" in _refusal(decision, 409, "closed")


async def test_a_request_naming_a_foreign_host_is_refused_403_by_a_server_without_a_token(server: Served):
    port = server.url.rsplit(":", 1)[1]
    rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    async with httpx.AsyncClient(base_url=server.url) as http:
        refused = await http.post("/api/sessions", json={"agent_spec": chatter("x")}, headers=rebound)
        page = await http.get("/", headers=rebound)
        local = await http.get("/api/runs", headers={"Host": f"localhost:{port}"})
    assert "STALWART_SERVE_TOKEN" in _refusal(refused, 403, "host_not_allowed")
    _refusal(page, 403, "host_not_allowed")
    assert local.status_code == 200, local.text


async def test_a_query_temporal_refuses_is_refused_400_with_its_reason(guarded: Served):
    async with guarded.client() as http:
        response = await http.get("/api/runs", params={"query": "garbage(("})
    message = _refusal(response, 400, "bad_query")
    assert "garbage((" in message and "--query" not in message


async def test_json_nested_too_deeply_is_refused_400(guarded: Served):
    nested = "[" * 100_000 + "]" * 100_000
    async with guarded.client() as http:
        response = await http.post("/api/runs", content=nested, headers={"Content-Type": "application/json"})
    assert "nests too deeply" in _refusal(response, 400, "malformed_json")


async def test_an_id_temporal_refuses_is_refused_400_not_as_a_server_fault(guarded: Served):
    async with guarded.client() as http:
        response = await http.post("/api/runs", json={"agent_spec": chatter("x"), "goal": "hi", "run_id": "r" * 2000})
    assert "length" in _refusal(response, 400, "invalid_argument")
