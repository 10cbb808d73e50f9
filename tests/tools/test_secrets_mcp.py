"""Issue 43, item 2: the worker itself refuses an MCP server that names its settings or a provider key.

`stalwart check` refuses these files (tests/test_secrets.py); a run started without it (another SDK, a client that
skipped check) reaches the worker, which must refuse too, before any request to the file's URL or any subprocess,
whatever its allowlist says: here `STALWART_ALLOWED_ENV=*` and `allowed_env` naming the variable.
"""

from __future__ import annotations

import uuid

import pytest
from mcp_test_servers import http_demo, stdio_demo

from stalwart.activities import secrets
from stalwart.client.api import StalwartClient
from stalwart.contracts.agent import AgentSpec, McpServerSpec, ScriptedReply, ScriptedToolCall
from stalwart.workers.worker import build_worker

from support.secret_values import forgetting_afterwards  # noqa: F401 - a fixture

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("forgetting_afterwards")]

WORKER_SETTINGS = ["STALWART_ENCRYPTION_KEYS", "STALWART_CODEC_TOKEN", "AWS_SECRET_ACCESS_KEY", "TEMPORAL_API_KEY"]
PROVIDER_KEYS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]


def _server(where: str, url: str, reference: str) -> McpServerSpec:
    if where == "header":
        return http_demo(url, headers={"X-Token": reference})
    return stdio_demo().model_copy(update={"env": {"TOKEN": reference}})


def _agent(server: McpServerSpec) -> AgentSpec:
    return AgentSpec(
        name="hostile",
        mcp_servers=[server],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="header", arguments={"name": "x-token"})]),
            ScriptedReply(text="done"),
        ],
    )


async def _run(env, task_queue, agent, **options):
    async with build_worker(env.client, task_queue=task_queue, **options):
        handle = await StalwartClient(env.client, task_queue=task_queue).start(agent, "go")
        return await handle.result(), (await handle.history()).to_json()


@pytest.mark.parametrize("where", ["header", "stdio env"])
@pytest.mark.parametrize("variable", WORKER_SETTINGS + PROVIDER_KEYS)
async def test_the_worker_refuses_an_mcp_server_naming_its_setting_or_a_provider_key_whatever_the_allowlist(
    time_skipping_env, task_queue, http_mcp_url, monkeypatch, variable, where
):
    value = f"worker-secret-{uuid.uuid4().hex}"
    if variable != "STALWART_ENCRYPTION_KEYS":  # set, it would encrypt this worker's payloads: refused unset too
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv(secrets.ALLOWED_ENV_VAR, "*")
    agent = _agent(_server(where, http_mcp_url, f"Bearer ${{{variable}}}"))
    result, history = await _run(time_skipping_env, task_queue, agent, allowed_env=[variable])
    assert result.stop_reason == "error" and variable in (result.error or "")
    said = "sends it only to that provider" if variable in PROVIDER_KEYS else "a setting of the worker itself"
    assert said in (result.error or "") and "STALWART_AGENT_" in (result.error or "")
    assert not [step for step in result.steps if step.role == "tool"], "no tool ran with the variable"
    assert value not in history and value not in result.model_dump_json()


async def test_a_variable_of_the_agent_namespace_is_sent_and_redacted(time_skipping_env, task_queue, http_mcp_url):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STALWART_AGENT_MCP_TOKEN", f"agent-token-{uuid.uuid4().hex}")
        agent = _agent(_server("header", http_mcp_url, "${STALWART_AGENT_MCP_TOKEN}"))
        result, _ = await _run(time_skipping_env, task_queue, agent)
    assert result.stop_reason == "done", result.error
    assert [step.result for step in result.steps if step.role == "tool"] == [secrets.REDACTED]
