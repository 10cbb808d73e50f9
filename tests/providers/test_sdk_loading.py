"""A worker loads a provider's SDK when an agent first uses that provider, not when it starts: the SDKs are most
of a worker's start-up, and an agent on one provider never needs the others."""

from __future__ import annotations

import json

import pytest

from support.fresh_python import printed_by
from support.head_start import HeadStart, head_start

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


def _sdks_loaded_after_resolving(*models: str) -> HeadStart[str]:
    """The provider SDKs a fresh interpreter has loaded once it built a worker's plugin and resolved `models`.

    Each probe is a few seconds of a core importing: they run from the start of the session
    (support/head_start.py)."""
    return head_start(lambda: printed_by(PROBE.format(models=models)))


SCRIPTED = _sdks_loaded_after_resolving("scripted")
LOADED = {
    "openai:gpt-4.1-mini": "['openai']",
    "openai-responses:gpt-4.1-mini": "['openai']",
    "openai-compatible:llama3.1": "['openai']",
    "ollama:llama3.1": "['openai']",
    "anthropic:claude-sonnet-4-5": "['anthropic']",
}
BY_MODEL = {model: _sdks_loaded_after_resolving(model) for model in LOADED}
FROZEN = head_start(lambda: printed_by(FREEZE_PROBE.format(freeze="gc.freeze()")))
NEVER_FROZEN = head_start(lambda: printed_by(FREEZE_PROBE.format(freeze="")))


@pytest.mark.head_start(SCRIPTED)
def test_a_worker_and_its_scripted_agents_load_no_provider_sdk(head_start_result: str):
    assert head_start_result == "[]"


@pytest.mark.parametrize(
    ("model", "loaded"),
    [pytest.param(model, loaded, marks=pytest.mark.head_start(BY_MODEL[model])) for model, loaded in LOADED.items()],
)
def test_an_agent_loads_only_the_sdk_of_its_own_provider(model: str, loaded: str, head_start_result: str):
    assert head_start_result == loaded


@pytest.mark.head_start(FROZEN)
def test_a_process_that_froze_its_imports_freezes_what_an_sdk_loaded_on_first_use_made(head_start_result: str):
    """As the `stalwart` command does: otherwise each full collection would scan the SDK's objects again."""
    before, after_first_use, after_second_use = json.loads(head_start_result)
    assert after_first_use - before > 50_000  # anthropic's import makes about 120,000
    assert after_second_use == after_first_use


@pytest.mark.head_start(NEVER_FROZEN)
def test_a_process_that_never_froze_anything_has_nothing_frozen_by_an_sdks_first_use(head_start_result: str):
    assert json.loads(head_start_result) == [0, 0, 0]
