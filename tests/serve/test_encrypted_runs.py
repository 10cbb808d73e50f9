"""`stalwart serve` with the workers' encryption keys reads encrypted runs: the conversation and the answer as it is
written (heartbeat details, sealed like every payload) reach the browser as text."""

from __future__ import annotations

import base64
import os

import pytest
from serve_agents import ANSWER, writer

from stalwart.activities.storage.encryption import KEYS_VAR
from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.workers.worker import build_worker

from support.serve_api import events, open_session, served

pytestmark = pytest.mark.slow


async def test_an_encrypted_sessions_messages_and_streamed_answer_are_served_as_text(
    dev_env, task_queue: str, wire, opened, monkeypatch
):
    monkeypatch.setenv(KEYS_VAR, f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    sealed = await connect(dev_env.address, from_config=False)  # the project's converter, with the keys
    spec, _ = writer(wire, ANSWER)
    async with (
        build_worker(sealed, task_queue=task_queue),
        served(StalwartClient(sealed, task_queue=task_queue)) as server,
        server.client() as http,
    ):
        session_id = await open_session(http, spec, opened)
        await http.post(f"/api/sessions/{session_id}/messages", json={"message": "secret question"})
        async with events(http, session_id) as stream:
            seen, final = await stream.until("step", lambda d: d["record"]["role"] == "assistant")
    deltas = [e.data["text"] for e in seen if e.kind == "delta"]
    assert "".join(deltas) == ANSWER and len(deltas) > 1
    assert [e.data["record"]["content"] for e in seen if e.kind == "step"] == ["secret question", ANSWER]
    history = await dev_env.client.get_workflow_handle(session_id).fetch_history()  # read without the keys
    [started_input] = history.events[0].workflow_execution_started_event_attributes.input.payloads
    assert started_input.metadata["encoding"] == b"binary/encrypted"
    assert "secret question" not in history.to_json() and "Seventeen" not in history.to_json()
