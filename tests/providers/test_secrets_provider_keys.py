"""Issue 43, item 2: a provider key reaches only its own provider; no worker setting is ever a model's key.

A model's `api_key_env` and `base_url` are the one way a key leaves the worker, and an agent file chooses both: with
`api_key_env = "ANTHROPIC_API_KEY"` on an OpenAI-compatible model at the file's URL, the worker sent its Anthropic key
there. The worker refuses before any request, whatever its allowlist says (`STALWART_ALLOWED_ENV=*` here).
"""

from __future__ import annotations

import pytest
from flavors import FLAVORS, agent_for, run_agent

from stalwart.activities import secrets

from support.secret_values import forgetting_afterwards  # noqa: F401 - a fixture
from wire_server.script import Reply

pytestmark = pytest.mark.usefixtures("forgetting_afterwards")

COMPATIBLE = next(f for f in FLAVORS if f.id == "openai-compatible")


@pytest.mark.parametrize(
    ("variable", "said"),
    [
        ("ANTHROPIC_API_KEY", "sends it only to that provider"),
        ("OPENAI_API_KEY", "sends it only to that provider"),
        ("STALWART_CODEC_TOKEN", "a setting of the worker itself"),
        ("AWS_SECRET_ACCESS_KEY", "a setting of the worker itself"),
    ],
)
async def test_a_model_naming_another_providers_key_or_a_worker_setting_is_refused_before_any_request(
    time_skipping_env, task_queue, wire, monkeypatch, variable, said
):
    monkeypatch.setenv(variable, "worker-secret-0123456789abcdef")
    monkeypatch.setenv(secrets.ALLOWED_ENV_VAR, "*")
    script = wire.script(Reply(text="thanks for the key"))
    agent = agent_for(COMPATIBLE, script, tools=[]).model_copy(update={"api_key_env": variable})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert result.stop_reason == "error" and variable in (result.error or "") and said in (result.error or "")
    assert "STALWART_AGENT_" in (result.error or "")
    assert script.requests == [], "nothing was sent to the agent file's base_url"


async def test_a_key_of_the_agent_namespace_reaches_the_base_url_the_file_names(
    time_skipping_env, task_queue, wire, monkeypatch
):
    monkeypatch.setenv("STALWART_AGENT_GATEWAY_KEY", "gateway-key-0123456789")
    script = wire.script(Reply(text="hello"))
    agent = agent_for(COMPATIBLE, script, tools=[]).model_copy(update={"api_key_env": "STALWART_AGENT_GATEWAY_KEY"})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert result.stop_reason == "done", result.error
    assert script.requests[0].headers.get("authorization") == "Bearer gateway-key-0123456789"
