"""Prices, cost budgets, model choice by available keys, and what error messages keep out."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anthropic
import httpx2
import openai
import pytest
from flavors import FLAVORS, agent_for, run_agent

from stalwart.activities import pricing
from stalwart.activities.pricing import PRICES_ENV, Price, price_for, price_of, register_price
from stalwart.activities.providers import (
    ModelConfigError,
    ModelRequestError,
    ModelUnavailableError,
    choose_model,
    effective,
)
from stalwart.activities.providers.errors import Target, translate
from stalwart.activities.retry_after import retry_after_seconds
from stalwart.contracts.agent import AgentSpec, Budgets
from stalwart.contracts.messages import Usage

from wire_server.script import Call, Reply


def test_price_counts_cached_input_at_its_own_rate():
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=400_000)
    assert Price(input=1.0, output=4.0, cached_input=0.25).cost(usage) == pytest.approx(0.6 + 0.1 + 4.0)


@pytest.fixture(autouse=True)
def own_price_table(monkeypatch):
    """Each test extends a copy of the price table, so what it registers or loads does not leak into later tests."""
    monkeypatch.setattr(pricing, "PRICES", dict(pricing.PRICES))
    monkeypatch.setattr(pricing, "_loaded_file", None)


def test_dated_model_names_use_their_base_price():
    assert price_of("anthropic:claude-haiku-4-5-20251001") == Price(1.0, 5.0, 0.10)
    assert price_of("openai-responses:gpt-4.1-2025-04-14") == Price(2.0, 8.0, 0.5)


def test_a_dated_name_with_its_own_entry_uses_it_not_the_base_price():
    register_price("openai:gpt-4.1-mini-2025-04-14", Price(3.0, 12.0))
    assert price_of("openai:gpt-4.1-mini-2025-04-14") == Price(3.0, 12.0)
    assert price_of("openai-responses:gpt-4.1-mini-2025-04-14") == Price(3.0, 12.0)
    assert price_of("openai:gpt-4.1-mini-2025-05-01") == Price(0.40, 1.60, 0.10)


def test_price_table_is_extended_from_the_file_named_in_the_environment(tmp_path, monkeypatch):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"openai-compatible:qwen3": {"input": 0.2, "output": 0.6}}))
    monkeypatch.setenv(PRICES_ENV, str(table))
    assert price_of("openai-compatible:qwen3") == Price(input=0.2, output=0.6)


def test_price_file_is_read_again_only_when_it_changes(tmp_path, monkeypatch):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"openai-compatible:qwen3": {"input": 0.2, "output": 0.6}}))
    monkeypatch.setenv(PRICES_ENV, str(table))
    reads: list[object] = []
    load = pricing.load_prices
    monkeypatch.setattr(pricing, "load_prices", lambda path: (reads.append(path), load(path)))
    for _ in range(3):
        assert price_of("openai-compatible:qwen3") == Price(input=0.2, output=0.6)
    assert len(reads) == 1
    table.write_text(json.dumps({"openai-compatible:qwen3": {"input": 0.3, "output": 0.9}}))
    mtime = table.stat().st_mtime_ns + 1_000_000_000
    os.utime(table, ns=(mtime, mtime))
    assert price_of("openai-compatible:qwen3") == Price(input=0.3, output=0.9)
    assert len(reads) == 2


def test_cost_budget_on_an_unpriced_model_is_a_config_error_naming_the_fix():
    agent = AgentSpec(name="a", model="openai:gpt-unknown", budgets=Budgets(max_cost_usd=1.0))
    with pytest.raises(ModelConfigError, match=PRICES_ENV):
        price_for(agent)


async def test_cost_budget_on_an_unpriced_model_fails_before_the_paid_call(
    time_skipping_env, task_queue, wire, monkeypatch
):
    flavor = FLAVORS[0]
    monkeypatch.setenv(flavor.key_env, "sk-test-budget-0123456789")
    script = wire.script(Reply(text="never paid for"))
    agent = agent_for(flavor, script, budgets=Budgets(max_cost_usd=1.0)).model_copy(
        update={"model": "openai:gpt-unknown"}
    )
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert (result.stop_reason, len(script.requests)) == ("error", 0)
    assert "max_cost_usd" in result.error and PRICES_ENV in result.error


async def test_cost_budget_stops_the_run_with_max_cost(time_skipping_env, task_queue, wire, monkeypatch):
    flavor = FLAVORS[0]
    monkeypatch.setenv(flavor.key_env, "sk-test-budget-0123456789")
    expensive = Reply(calls=(Call("calculator", {"expression": "1+1"}),), input_tokens=500_000, output_tokens=50_000)
    script = wire.script(expensive, expensive, Reply(text="never reached"))
    agent = agent_for(flavor, script, budgets=Budgets(max_cost_usd=0.5))
    result = await run_agent(time_skipping_env, task_queue, agent)  # each turn costs $0.28 on gpt-4.1-mini
    assert result.stop_reason == "max_cost" and len(script.requests) == 2 and result.usage.cost_usd >= 0.5


def test_auto_runs_on_openai_when_its_key_is_set():
    choice = choose_model(AgentSpec(name="a", model="auto"), {"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-y"})
    assert choice.model.startswith("openai:") and "OPENAI_API_KEY" in choice.reason


def test_auto_runs_on_anthropic_when_only_its_key_is_set():
    assert choose_model(AgentSpec(name="a", model="auto"), {"ANTHROPIC_API_KEY": "sk-y"}).model.startswith("anthropic:")


def test_auto_without_keys_runs_on_the_scripted_model_and_says_so():
    choice = choose_model(AgentSpec(name="a", model="auto"), {})
    assert choice.model == "scripted" and "scripted" in choice.reason


def test_named_model_without_its_key_falls_back_to_scripted_replies():
    agent = AgentSpec(name="a", model="openai:gpt-4.1-mini", scripted=[{"text": "hi"}])
    choice = choose_model(agent, {})
    assert choice.model == "scripted" and "OPENAI_API_KEY is not set" in choice.reason


def test_retry_after_accepts_seconds_milliseconds_and_dates():
    assert retry_after_seconds({"retry-after": "7"}) == 7
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None  # in the past: no wait
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": soon}) == pytest.approx(30, abs=2)
    naive = (datetime.now(UTC) + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S -0000")
    assert retry_after_seconds({"retry-after": naive}) == pytest.approx(30, abs=2)  # no zone given: read as UTC


def test_unreadable_retry_after_is_ignored_and_the_error_stays_retryable():
    assert retry_after_seconds({"retry-after": "soon-ish"}) is None
    assert retry_after_seconds({"retry-after": "Wed, 99 Foo 2015 07:28:00 GMT"}) is None
    request = httpx2.Request("POST", "http://x/v1/chat/completions")
    response = httpx2.Response(
        429, request=request, headers={"retry-after": "Wed, 99 Foo 2015"}, json={"error": {"message": "slow down"}}
    )
    err = openai.RateLimitError("429", response=response, body=response.json())
    translated = translate(err, Target("openai", "gpt-4.1", "OPENAI_API_KEY"), None)
    assert isinstance(translated, ModelUnavailableError) and translated.retryable and translated.retry_after is None


def test_error_messages_keep_out_the_key_even_when_the_provider_echoes_it():
    request = httpx2.Request("POST", "http://x/v1/chat/completions")
    response = httpx2.Response(
        401, request=request, json={"error": {"message": "Incorrect API key provided: sk-live-SECRET123456"}}
    )
    err = openai.AuthenticationError("401", response=response, body=response.json())
    translated = translate(err, Target("openai", "gpt-4.1", "OPENAI_API_KEY"), "sk-live-SECRET123456")
    assert (
        isinstance(translated, ModelRequestError)
        and "SECRET123456" not in str(translated)
        and "OPENAI_API_KEY" in str(translated)
    )


def test_overloaded_anthropic_is_retryable():
    request = httpx2.Request("POST", "http://x/v1/messages")
    response = httpx2.Response(
        529, request=request, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    err = anthropic.APIStatusError("overloaded", response=response, body=response.json())
    assert isinstance(
        translate(err, Target("anthropic", "claude-haiku-4-5", "ANTHROPIC_API_KEY"), None), ModelUnavailableError
    )


def test_auto_is_resolved_on_the_worker_from_its_own_keys(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert effective(AgentSpec(name="a", model="auto")).model.startswith("anthropic:")
