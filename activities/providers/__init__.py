"""Model providers, chosen by the prefix of the agent's `model` string."""

from __future__ import annotations

from collections.abc import Callable

from activities.providers.base import ModelConfigError, ModelError, ModelProvider, ModelRequestError, ModelUnavailableError
from activities.providers.scripted import ScriptedProvider
from contracts.agent import AgentSpec

ProviderFactory = Callable[[AgentSpec], ModelProvider]

PROVIDERS: dict[str, ProviderFactory] = {
    "scripted": lambda agent: ScriptedProvider(),
}


def resolve(agent: AgentSpec) -> ModelProvider:
    """The provider for an agent's model string, e.g. `scripted` or `openai:gpt-4.1-mini`."""
    prefix = agent.model.split(":", 1)[0]
    factory = PROVIDERS.get(prefix)
    if factory is None:
        raise ModelConfigError(
            f"agent {agent.name!r} names model {agent.model!r}, whose provider {prefix!r} is unknown; "
            f"use one of: {', '.join(sorted(PROVIDERS))} (as `provider:model-name`)."
        )
    return factory(agent)


__all__ = [
    "PROVIDERS",
    "ModelConfigError",
    "ModelError",
    "ModelProvider",
    "ModelRequestError",
    "ModelUnavailableError",
    "resolve",
]
