"""A worker loads a provider's SDK when an agent first uses that provider, not when it starts: the SDKs are most
of a worker's start-up, and an agent on one provider never needs the others."""

from __future__ import annotations

import json

import pytest

from support.fresh_python import printed_by

PROBE = """
import sys
import stalwart.workers.worker  # everything a worker imports at start
from stalwart.workers.plugin import StalwartPlugin
from stalwart.activities import providers
from stalwart.contracts.agent import AgentSpec

StalwartPlugin()
clients = providers.SdkClients()
for model in {models!r}:
    providers.resolve(AgentSpec(name="probe", model=model, base_url="http://127.0.0.1:9/v1"), clients)
print(sorted(sdk for sdk in ("openai", "anthropic") if sdk in sys.modules))
"""


FREEZE_PROBE = """
import gc
from stalwart.activities import providers
from stalwart.contracts.agent import AgentSpec

gc.collect()
{freeze}
frozen = [gc.get_freeze_count()]
for _ in range(2):
    providers.resolve(AgentSpec(name="probe", model="anthropic:claude-sonnet-4-5"), providers.SdkClients())
    frozen.append(gc.get_freeze_count())
print(frozen)
"""


def _sdks_loaded_after_resolving(*models: str) -> str:
    """The provider SDKs a fresh interpreter has loaded once it built a worker's plugin and resolved `models`."""
    return printed_by(PROBE.format(models=models))


def test_a_worker_and_its_scripted_agents_load_no_provider_sdk():
    assert _sdks_loaded_after_resolving("scripted") == "[]"


@pytest.mark.parametrize(
    ("model", "loaded"),
    [
        ("openai:gpt-4.1-mini", "['openai']"),
        ("openai-responses:gpt-4.1-mini", "['openai']"),
        ("openai-compatible:llama3.1", "['openai']"),
        ("ollama:llama3.1", "['openai']"),
        ("anthropic:claude-sonnet-4-5", "['anthropic']"),
    ],
)
def test_an_agent_loads_only_the_sdk_of_its_own_provider(model: str, loaded: str):
    assert _sdks_loaded_after_resolving(model) == loaded


def test_a_process_that_froze_its_imports_freezes_what_an_sdk_loaded_on_first_use_made():
    """As the `stalwart` command does: otherwise each full collection would scan the SDK's objects again."""
    before, after_first_use, after_second_use = json.loads(printed_by(FREEZE_PROBE.format(freeze="gc.freeze()")))
    assert after_first_use - before > 50_000  # anthropic's import makes about 120,000
    assert after_second_use == after_first_use


def test_a_process_that_never_froze_anything_has_nothing_frozen_by_an_sdks_first_use():
    assert json.loads(printed_by(FREEZE_PROBE.format(freeze=""))) == [0, 0, 0]
