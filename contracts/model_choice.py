"""Which model an agent runs on, given the keys a machine has: real providers when a key is set, else scripted.

Plain logic over an environment mapping, shared by the worker (which decides) and the CLI (which can
only guess from its own environment, and says so).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from stalwart.contracts.agent import AgentSpec

AUTO = "auto"
DEFAULT_MODELS = (
    ("OPENAI_API_KEY", "openai:gpt-4.1-mini"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"),
)
KEY_ENVS = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True)
class ModelChoice:
    model: str
    reason: str


def choose_model(agent: AgentSpec, environ: Mapping[str, str] | None = None) -> ModelChoice:
    """The model to run `agent` on, and a sentence saying why, for the user to read.

    `auto` takes OpenAI when OPENAI_API_KEY is set, else Anthropic when
    ANTHROPIC_API_KEY is set, else the scripted model. A named real model
    whose key is missing falls back to the agent's scripted replies if it has
    any; otherwise it is kept, and the run will say which key to set.
    """
    environ = os.environ if environ is None else environ
    if agent.model == AUTO:
        for env, model in DEFAULT_MODELS:
            if environ.get(env, "").strip():
                return ModelChoice(model, f"{env} is set, so the agent runs on {model}")
        return ModelChoice(
            "scripted", "neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set, so the agent runs on the scripted model"
        )
    provider = agent.model.split(":", 1)[0]
    key_env = agent.api_key_env or KEY_ENVS.get(provider)
    if key_env is None or environ.get(key_env, "").strip():
        return ModelChoice(agent.model, f"the agent file names {agent.model}")
    if agent.scripted:
        return ModelChoice(
            "scripted", f"{key_env} is not set, so the agent runs on its scripted replies instead of {agent.model}"
        )
    return ModelChoice(
        agent.model, f"the agent file names {agent.model}, but {key_env} is not set: set it where the worker runs"
    )
