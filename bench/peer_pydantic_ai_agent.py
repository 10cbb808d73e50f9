"""The benchmark's agent for pydantic-ai, made durable as its Temporal guide says: a regular `Agent` with the
`TemporalDurability` capability (the successor of `TemporalAgent`, which this release deprecates in its favour;
`TemporalAgent` wraps the same activities). Its model is pydantic-ai's own `OpenAIChatModel` at the local fake model
(`bench/fake_model.py`), where Stalwart's `openai:` model sends its requests too.

The agent is built when this module is first imported, from `FAKE_MODEL_URL`, which `bench/peers.py` sets once
the fake model is up; the workflow module imports it passed through the sandbox, so workflow and activities hold
the one agent the worker registered. Importing it needs the `peers` extra (`pip install -e '.[peers]'`).
"""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from bench.fake_model import FAKE_MODEL_URL, INSTRUCTIONS, KEY_ENV, MODEL


async def echo(text: str) -> str:
    """Return the text unchanged; useful to check that tool calling works.

    Args:
        text: The text to echo back.
    """
    return text


AGENT = Agent(
    OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=os.environ[FAKE_MODEL_URL], api_key=os.environ[KEY_ENV])),
    name="bench",
    instructions=INSTRUCTIONS,
    tools=[echo],
    capabilities=[TemporalDurability()],
)
