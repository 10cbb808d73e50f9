"""A model call that finished while the Temporal server was down is not sent again (issue 11, defect 11).

Its worker reports the turn for about 10 s and then gives up (the SDK's limit); when the server is back the
call times out on its heartbeats and comes back as a new attempt, which the worker answers with the turn it
kept: no second request to the provider, no tokens spent twice. The real openai SDK against the wire server.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from flavors import FLAVORS, agent_for

from stalwart.client.connection import connect
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers.dev_server import DevServer, free_port
from stalwart.workers.search_attributes import ensure_search_attributes
from stalwart.workers.worker import build_worker

from wire_server.script import Reply

OUTAGE_SECONDS = 20
ANSWER = "Seventeen times twenty-three plus four is three hundred and ninety-five."


@pytest.mark.slow
async def test_server_outage_a_model_call_finished_during_a_20_s_outage_is_not_sent_again(tmp_path, wire, monkeypatch):
    flavor = FLAVORS[0]
    monkeypatch.setenv(flavor.key_env, "sk-test-outage-0123456789")
    script = wire.script(Reply(text=ANSWER, pause=0.1))  # streams for about a second: finishes in the outage
    port, db = free_port(), tmp_path / "temporal.db"
    server = DevServer(port=port, ui_port=None, db_file=db)
    await server.start()
    again: DevServer | None = None
    try:
        client = await connect(server.address, from_config=False)
        await ensure_search_attributes(client)
        async with build_worker(client, task_queue="outage-model"):
            handle = await client.start_workflow(
                WORKFLOW_TYPE,
                RunInput(agent=agent_for(flavor, script, tools=[]), goal="What is 17*23+4?"),
                id=f"outage-model-{port}",
                task_queue="outage-model",
                result_type=AgentResult,
            )
            while not script.requests:
                await asyncio.sleep(0.01)
            assert server.process is not None
            os.killpg(server.process.pid, signal.SIGKILL)  # the server dies while the model answers
            server.process.wait()
            await asyncio.sleep(OUTAGE_SECONDS)
            again = DevServer(port=port, ui_port=None, db_file=db)
            await again.start()
            result = await handle.result()
            history = await handle.fetch_history()
    finally:
        if again is not None:
            again.stop()
        server.stop()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    print(f"\nmodel requests across a {OUTAGE_SECONDS} s server outage: {len(script.requests)}; attempts: {attempts}")
    assert (result.stop_reason, result.answer) == ("done", ANSWER)
    assert len(script.requests) == 1
