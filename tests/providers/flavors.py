"""One flavour per provider, which every behaviour test runs against, and helpers to run agents on them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers.worker import build_worker

from wire_server.server import Script


@dataclass(frozen=True)
class Flavor:
    """A provider as an agent names it, where its key comes from, and how its requests carry tool results."""

    id: str
    model: str
    key_env: str
    spec_key_env: str | None
    base_url: Callable[[Script], str]
    results_of: Callable[[dict[str, Any]], list[tuple[str, str]]]
    """(call id, content) of the tool results in a request body, in order."""
    texts_of: Callable[[dict[str, Any]], list[tuple[str, str]]]
    """(role, text) of the system prompt and the text messages of a request body, in order."""


def _chat_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _responses_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(i["call_id"], i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]


def _anthropic_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    users = [
        m for m in body["messages"] if m["role"] == "user" and any(b.get("type") == "tool_result" for b in m["content"])
    ]
    return [(b["tool_use_id"], b["content"]) for m in users for b in m["content"] if b.get("type") == "tool_result"]


def _chat_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in body["messages"] if isinstance(m.get("content"), str)]


def _responses_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [("system", body["instructions"])] + [
        (i["role"], i["content"]) for i in body["input"] if isinstance(i.get("content"), str)
    ]


def _anthropic_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    texts = [("system", body["system"])]
    for message in body["messages"]:
        texts += [(message["role"], b["text"]) for b in message["content"] if b.get("type") == "text"]
    return texts


FLAVORS = [
    Flavor(
        "openai-chat",
        "openai:gpt-4.1-mini",
        "OPENAI_API_KEY",
        None,
        lambda s: s.openai_base_url,
        _chat_results,
        _chat_texts,
    ),
    Flavor(
        "openai-responses",
        "openai-responses:gpt-4.1-mini",
        "OPENAI_API_KEY",
        None,
        lambda s: s.openai_base_url,
        _responses_results,
        _responses_texts,
    ),
    Flavor(
        "anthropic",
        "anthropic:claude-haiku-4-5",
        "ANTHROPIC_API_KEY",
        None,
        lambda s: s.anthropic_base_url,
        _anthropic_results,
        _anthropic_texts,
    ),
    Flavor(
        "openai-compatible",
        "openai-compatible:llama3.1",
        "STALWART_LOCAL_LLM_KEY",  # a worker lets agent files read STALWART_* (and the provider keys) only
        "STALWART_LOCAL_LLM_KEY",
        lambda s: s.openai_base_url,
        _chat_results,
        _chat_texts,
    ),
]


def agent_for(flavor: Flavor, script: Script, **fields: Any) -> AgentSpec:
    """An agent on `flavor` whose requests go to `script` on the wire server."""
    return AgentSpec(
        name="wire",
        model=flavor.model,
        base_url=flavor.base_url(script),
        api_key_env=flavor.spec_key_env,
        **{"tools": ["calculator"], **fields},
    )


async def start_run(
    env: WorkflowEnvironment, task_queue: str, agent: AgentSpec, goal: str
) -> WorkflowHandle[Any, AgentResult]:
    return await env.client.start_workflow(
        WORKFLOW_TYPE,
        RunInput(agent=agent, goal=goal),
        id=f"wire-{task_queue}",
        task_queue=task_queue,
        result_type=AgentResult,
    )


async def run_agent(
    env: WorkflowEnvironment, task_queue: str, agent: AgentSpec, goal: str = "What is 17*23+4?"
) -> AgentResult:
    async with build_worker(env.client, task_queue=task_queue):
        handle = await start_run(env, task_queue, agent, goal)
        return await handle.result()
