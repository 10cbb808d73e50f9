"""API keys, read from the worker's environment at the moment of the call.

A key is never part of an agent spec, a workflow input or a result: the spec
may only name the environment variable (`api_key_env`), one the worker allows
(`activities/secrets.py`: a provider's own key only for a model of that provider), and the key is
redacted from whatever leaves the activity.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from stalwart.activities import secrets
from stalwart.activities.providers.base import ModelConfigError
from stalwart.contracts.agent import AgentSpec

LOCAL_PLACEHOLDER_KEY = "not-needed"
"""Sent to OpenAI-compatible servers that want no key (Ollama, llama.cpp, vLLM without --api-key)."""


def key_env(agent: AgentSpec, default_env: str | None) -> str | None:
    """The environment variable that holds this agent's key."""
    return agent.api_key_env or default_env


def api_key(agent: AgentSpec, default_env: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The agent's API key from the worker's environment, or a config error that says where to put it.

    An agent without `api_key_env` on a provider without a default variable
    (a local OpenAI-compatible server) gets a placeholder key.
    """
    environ = os.environ if environ is None else environ
    name = key_env(agent, default_env)
    if name is None:
        return LOCAL_PLACEHOLDER_KEY
    try:  # the worker reads only the variables it allows; what it reads is redacted wherever it would leave
        where, provider = f"agent {agent.name!r}: `api_key_env`", agent.model.partition(":")[0]
        value = (secrets.read_env(name, where, environ, provider=provider, base_url=agent.base_url) or "").strip()
    except secrets.EnvNotAllowed as err:
        raise ModelConfigError(str(err)) from None
    if not value:
        raise ModelConfigError(
            f"agent {agent.name!r} uses model {agent.model!r}, which needs an API key in the environment variable "
            f"`{name}`, but the worker's environment has none. Export {name}=... where the worker runs and restart it"
            + ("" if agent.api_key_env else ", or name another variable with `api_key_env` in the agent file")
            + "."
        )
    return value
