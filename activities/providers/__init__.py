"""Model providers, chosen by the prefix of the agent's `model` string.

| model string                      | API                                   | key from            |
|-----------------------------------|---------------------------------------|---------------------|
| `scripted`                        | canned replies                        | -                   |
| `openai:gpt-4.1-mini`             | OpenAI Chat Completions               | OPENAI_API_KEY      |
| `openai-responses:gpt-4.1-mini`   | OpenAI Responses                      | OPENAI_API_KEY      |
| `anthropic:claude-sonnet-4-5`     | Anthropic Messages                    | ANTHROPIC_API_KEY   |
| `openai-compatible:llama3.1` | Chat Completions at `base_url` (vLLM, llama.cpp, LM Studio) | `api_key_env` if set |
| `ollama:llama3.1` | Chat Completions at `base_url`, default http://localhost:11434/v1 | `api_key_env` if set |
| `auto` | the first of OpenAI, Anthropic whose key is set, else scripted (`choose_model`) | |

`api_key_env` names another variable of the worker's environment for any of them.
Under `[extra]` an agent may set `first_token_seconds` (default 90: a stream
with no first event by then is retried) and `stall_seconds` (default 60: a
started stream silent that long is retried). The SDKs never retry; Temporal
does (`workflows/policies.py`), waiting `Retry-After` when the provider sends one.

A worker loads each provider's SDK when an agent first uses it, not when it starts: the SDKs take most of a
worker's start-up (`python -c "import stalwart.workers.worker"`: 3.0 s here with them, 1.2 s without), and a
worker whose agents use one provider, or only scripted replies, never needs the others. The first turn on an SDK
pays its import once per worker process (about 1.2 s for anthropic, 0.5 s for openai here).
"""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from stalwart.activities.providers.base import (
    AnyModelProvider,
    ModelConfigError,
    ModelError,
    ModelProvider,
    ModelRequestError,
    ModelUnavailableError,
    StreamingModelProvider,
)
from stalwart.activities.providers.clients import SdkClients
from stalwart.activities.providers.scripted import ScriptedProvider, speaks_mock_actions
from stalwart.contracts.agent import DEFAULT_TEMPERATURE, AgentSpec
from stalwart.contracts.model_choice import AUTO, ModelChoice, choose_model

ProviderFactory = Callable[[AgentSpec, SdkClients], AnyModelProvider]
"""Makes an agent's provider; streaming SDK providers take the worker's clients (`activities.providers.clients`)."""
OLLAMA_BASE_URL = "http://localhost:11434/v1"


@contextmanager
def _loading_an_sdk() -> Iterator[None]:
    """Around the import of a provider's module, which loads its SDK the first time.

    A process that froze what its imports made (`gc.freeze()`: the `stalwart` command does, and docs/production.md shows
    a worker of your own how) freezes what the SDK's import made too, so its full collections never scan those
    objects either (about 54,000 for openai and 120,000 for anthropic). Whatever else is alive at that moment is
    frozen with them: once per SDK, early in the worker's life."""
    modules = len(sys.modules)
    yield
    if len(sys.modules) > modules and gc.get_freeze_count():
        gc.freeze()


def _chat(
    clients: SdkClients, label: str, key_env: str | None, base_url: str | None = None, *, legacy_max_tokens: bool
) -> AnyModelProvider:
    """Chat Completions on the openai SDK."""
    with _loading_an_sdk():
        from stalwart.activities.providers.calling import Endpoint
        from stalwart.activities.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(Endpoint(label, key_env, base_url), clients, legacy_max_tokens=legacy_max_tokens)


def _compatible(agent: AgentSpec, clients: SdkClients) -> AnyModelProvider:
    if not agent.base_url:
        raise ModelConfigError(
            f"agent {agent.name!r} uses {agent.model!r} but sets no `base_url`; an OpenAI-compatible server needs "
            f'one, e.g. base_url = "http://localhost:8000/v1" for vLLM.'
        )
    return _chat(clients, "openai-compatible", None, legacy_max_tokens=True)


def _responses(agent: AgentSpec, clients: SdkClients) -> AnyModelProvider:
    with _loading_an_sdk():
        from stalwart.activities.providers.openai_responses import OpenAIResponsesProvider

    return OpenAIResponsesProvider(clients)


def _anthropic(agent: AgentSpec, clients: SdkClients) -> AnyModelProvider:
    with _loading_an_sdk():
        from stalwart.activities.providers.anthropic import AnthropicProvider

    return AnthropicProvider(clients)


PROVIDERS: dict[str, ProviderFactory] = {
    "scripted": lambda agent, clients: ScriptedProvider(),
    "openai": lambda agent, clients: _chat(clients, "openai", "OPENAI_API_KEY", legacy_max_tokens=False),
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "openai-compatible": _compatible,
    "ollama": lambda agent, clients: _chat(clients, "ollama", None, OLLAMA_BASE_URL, legacy_max_tokens=True),
}


def effective(agent: AgentSpec) -> AgentSpec:
    """The agent with `auto` replaced by the model this worker's keys allow, speaking the KAOS JSON actions
    when its replies come from `DEBUG_MOCK_RESPONSES` (see `scripted.speaks_mock_actions`)."""
    if agent.model == AUTO:
        agent = agent.model_copy(update={"model": choose_model(agent).model})
    if speaks_mock_actions(agent):
        agent = agent.model_copy(update={"action_format": "json"})
    if agent.temperature is None and takes_temperature(agent.model):
        agent = agent.model_copy(update={"temperature": DEFAULT_TEMPERATURE})
    return agent


_NO_TEMPERATURE = re.compile(r"anthropic:|(?:openai|openai-responses):(?:o\d|gpt-5)")
"""Models that get no default temperature: OpenAI's reasoning models refuse any but their own, and Anthropic has
deprecated the parameter (newer Claude models refuse it; an agent file that sets one still has it sent)."""


def takes_temperature(model: str) -> bool:
    """Whether `model` (`provider:name`) may be sent a temperature."""
    return not _NO_TEMPERATURE.match(model)


def resolve(agent: AgentSpec, clients: SdkClients) -> AnyModelProvider:
    """The provider for an agent's model string, e.g. `scripted` or `openai:gpt-4.1-mini`, on the worker's `clients`."""
    prefix, _, name = agent.model.partition(":")
    factory = PROVIDERS.get(prefix)
    if factory is None:
        raise ModelConfigError(
            f"agent {agent.name!r} names model {agent.model!r}, whose provider {prefix!r} is unknown; "
            f"use one of: {', '.join(sorted(PROVIDERS))} (as `provider:model-name`)."
        )
    if prefix != "scripted" and not name:
        raise ModelConfigError(
            f"agent {agent.name!r} names provider {prefix!r} but no model; write `{prefix}:model-name`."
        )
    return factory(agent, clients)


__all__ = [
    "PROVIDERS",
    "SdkClients",
    "ModelChoice",
    "ModelConfigError",
    "ModelError",
    "AnyModelProvider",
    "ModelProvider",
    "StreamingModelProvider",
    "ModelRequestError",
    "ModelUnavailableError",
    "choose_model",
    "effective",
    "resolve",
]
