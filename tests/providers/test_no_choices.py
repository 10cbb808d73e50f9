"""A Chat Completions stream that ends cleanly without a single choice holds no answer: it is garbled (a few
attempts), not a stream cut short, which was retried as an outage (8 attempts over about two minutes)."""

from __future__ import annotations

import pytest
from flavors import FLAVORS, agent_for, run_agent

from stalwart.activities.providers.base import ModelGarbledError

from wire_server.script import Garbage

NO_CHOICES = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[]}\n\ndata: [DONE]\n\n'
)
CHAT_FLAVORS = [flavor for flavor in FLAVORS if flavor.id in ("openai-chat", "openai-compatible")]


@pytest.mark.parametrize("chosen", CHAT_FLAVORS, ids=[flavor.id for flavor in CHAT_FLAVORS])
async def test_a_stream_without_a_choice_is_garbled_and_tried_a_few_times(
    time_skipping_env, task_queue, wire, monkeypatch, chosen
):
    monkeypatch.setenv(chosen.key_env, f"sk-test-{chosen.id}-0123456789")
    attempts = ModelGarbledError.MAX_ATTEMPTS
    script = wire.script(*[Garbage(200, NO_CHOICES, "text/event-stream")] * (attempts + 5))
    result = await run_agent(time_skipping_env, task_queue, agent_for(chosen, script, tools=[]))
    assert result.stop_reason == "error"
    assert len(script.requests) == attempts
    assert "ended without a single choice, so it holds no answer" in (result.error or "")
