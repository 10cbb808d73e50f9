"""A key the model writes into its answer is pushed to subscribers redacted, as the heartbeats and the result carry
it: the push channel hands the worker's text to another process, so it must never hold the key, nor the start of
one (issue 10's rule, for the broker of issue 44)."""

from __future__ import annotations

import uuid

import pytest
from test_push import CountedDescribes, until_the_model_call_runs

from stalwart.activities import secrets
from stalwart.client.api import StalwartClient
from stalwart.client.push import PushSource
from stalwart.client.stream import AnswerDelta, stream_answer
from stalwart.contracts.agent import AgentSpec

from support.secret_values import forgetting_afterwards  # noqa: F401 - a fixture
from wire_server.script import Freeze, Reply
from wire_server.server import WireServer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("forgetting_afterwards")]

KEY_ENV = "STALWART_TEST_STREAMS_REDACTED_KEY"


async def test_secret_leak_a_key_the_model_writes_is_pushed_redacted_while_the_turn_runs(
    stalwart_client: StalwartClient, new_worker, wire: WireServer, opened, monkeypatch: pytest.MonkeyPatch
):
    """The model echoes its key, then stalls: what the subscriber holds by then came by push, and only by push."""
    key = f"PLAINKEY{uuid.uuid4().hex.upper()}"
    monkeypatch.setenv(KEY_ENV, key)
    # The role event and four words, `Your key is <key>, `, then nothing more for ten minutes.
    script = wire.script(Freeze(Reply(text=f"Your key is {key}, keep it safe."), events=5, seconds=600))
    spec = AgentSpec(name="echo", model="openai:gpt-4.1-mini", base_url=script.openai_base_url, api_key_env=KEY_ENV)
    async with new_worker():
        handle = await stalwart_client.start(spec, "Who am I?")
        opened.append(handle.run_id)
        await until_the_model_call_runs(stalwart_client.temporal, handle.run_id)
        counted = CountedDescribes(stalwart_client.temporal, handle.run_id)
        sources: list[PushSource] = []
        events = stream_answer(counted.handle, poll_interval=3600, on_push=sources.append)
        streamed = ""
        async for event in events:
            assert isinstance(event, AnswerDelta), event
            streamed += event.text
            if streamed.endswith(", "):  # the fourth word, the key's, is in
                break
        await events.aclose()
    assert counted.describes == 1, "the text came by polling the server, not by push"
    assert sources[0].chunks > 0
    assert key not in streamed
    assert streamed == f"Your key is {secrets.REDACTED}, "
