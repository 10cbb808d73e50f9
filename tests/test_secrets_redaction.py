"""Issue 43, item 2: every secret a worker can see is redacted from its first unit of work.

A tool result or error holding a provider key went out whole (in the run's result, its history, `show`, the stored
transcripts) on a worker that had not yet called that provider: the redactor learnt a key only when something read
it. Now a worker knows, before its first activity, every provider key and secret setting of its environment. Each
value here is new to this process, and the agent's model is scripted: no provider is ever called. And a tool argument
or a bound run input holding `${NAME}` is text, never a variable's value.
"""

from __future__ import annotations

import logging
import os
import uuid

import pytest

from stalwart.activities import secrets
from stalwart.activities.tools import tool
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall

from support.secret_values import forgetting_afterwards  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("forgetting_afterwards")

SEEN_BY_THE_WORKER = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "STALWART_CODEC_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "TEMPORAL_API_KEY",
    "STALWART_AGENT_SEARCH_TOKEN",
]


@tool
def read_worker_variable(name: str) -> str:
    """Return a variable of the worker's environment, as a careless tool (`env`, a debug dump) would.

    Args:
        name: The variable.
    """
    return f"{name}={os.environ.get(name, '')}"


@tool
def fail_with_worker_variable(name: str) -> str:
    """Fail with an error quoting a variable of the worker's environment, as a client library may.

    Args:
        name: The variable.
    """
    raise RuntimeError(f"authentication failed with key {os.environ.get(name, '')}")


def _agent(tool_name: str, variable: str) -> AgentSpec:
    return AgentSpec(
        name="leaky",
        tools=[tool_name],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name=tool_name, arguments={"name": variable})]),
            ScriptedReply(text="done"),
        ],
    )


@pytest.mark.parametrize("tool_name", ["read_worker_variable", "fail_with_worker_variable"])
@pytest.mark.parametrize("variable", SEEN_BY_THE_WORKER)
async def test_a_tool_result_or_error_holding_a_secret_is_redacted_on_a_fresh_worker_before_any_provider_call(
    stalwart, worker_with, monkeypatch, caplog, variable, tool_name
):
    value = f"never-seen-{uuid.uuid4().hex}"
    monkeypatch.setenv(variable, value)
    caplog.set_level(logging.DEBUG)
    async with worker_with(read_worker_variable, fail_with_worker_variable):
        handle = await stalwart.start(_agent(tool_name, variable), "show me")
        result = await handle.result()
        history = (await handle.history()).to_json()
    tool_steps = [step for step in result.steps if step.role == "tool"]
    assert result.stop_reason == "done" and len(tool_steps) == 1
    said = tool_steps[0].error if tool_name == "fail_with_worker_variable" else tool_steps[0].result
    assert secrets.REDACTED in (said or "")
    assert value not in result.model_dump_json()
    assert value not in history
    assert value not in caplog.text


def test_each_encryption_key_and_the_content_of_a_key_file_are_secrets_from_the_start(tmp_path):
    first, second, in_file = (uuid.uuid4().hex for _ in range(3))
    key_file = tmp_path / "keys"
    key_file.write_text(f"2026-11:{in_file}\n")
    secrets.remember_environment(
        {"STALWART_ENCRYPTION_KEYS": f"2026-11:{first},2026-05:{second}", "STALWART_ENCRYPTION_KEY_FILE": str(key_file)}
    )
    shown = secrets.redact(f"a {first} b {second} c {in_file} d")
    assert shown == "a [redacted] b [redacted] c [redacted] d"


def test_an_identifier_beside_a_secret_is_not_one(tmp_path):
    """`AWS_ACCESS_KEY_ID` is often a plain word (the compose stack's MinIO user is `stalwart`): not redacted."""
    user = f"user{uuid.uuid4().hex[:6]}"
    secrets.remember_environment({"AWS_ACCESS_KEY_ID": user})
    assert secrets.redact(f"bucket of {user}") == f"bucket of {user}"


@pytest.mark.parametrize("bound", [False, True], ids=["tool-argument", "bound-run-input"])
async def test_a_reference_in_a_tool_argument_or_a_bound_input_reaches_the_tool_as_written(
    stalwart, worker_with, monkeypatch, bound
):
    """`${NAME}` is expanded only in an MCP server's headers and env: a model or a run input cannot read a variable."""
    value = f"never-sent-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", value)
    call = ScriptedToolCall(name="echo", arguments={} if bound else {"text": "${ANTHROPIC_API_KEY}"})
    agent = AgentSpec(
        name="literal",
        tools=["echo"],
        bindings={"echo": {"text": "note"}} if bound else {},
        scripted=[ScriptedReply(tool_calls=[call]), ScriptedReply(text="done")],
    )
    async with worker_with():
        handle = await stalwart.start(agent, "echo it", inputs={"note": "${ANTHROPIC_API_KEY}"} if bound else None)
        result = await handle.result()
    assert [step.result for step in result.steps if step.role == "tool"] == ["${ANTHROPIC_API_KEY}"]
    assert value not in result.model_dump_json()


def test_a_setting_that_is_one_plain_word_is_not_redacted_from_the_start():
    """A development default such as `AWS_SECRET_ACCESS_KEY=testing` would otherwise hide the word in every answer."""
    secrets.remember_environment({"AWS_SECRET_ACCESS_KEY": "plainwordsecret"})
    assert secrets.redact("a plainwordsecret b") == "a plainwordsecret b"
