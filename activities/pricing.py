"""What model calls cost: a per-model price table that users extend.

Prices are US dollars per million tokens, as providers publish them. A worker
adds or overrides entries with a JSON file named by `STALWART_PRICES`
(`{"openai:my-model": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}`)
or with `register_price` in code. Models served by yourself
(`openai-compatible:`, `ollama:`) cost nothing unless you price them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from stalwart.activities.providers.base import ModelConfigError
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Usage

PRICES_ENV = "STALWART_PRICES"
SELF_HOSTED = ("openai-compatible", "ollama", "scripted")


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens. `cached_input` defaults to the input price."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        dollars = (usage.input_tokens - cached) * self.input + cached * cached_rate + usage.output_tokens * self.output
        return round(dollars / 1_000_000, 10)


PRICES: dict[str, Price] = {
    "openai:gpt-5": Price(1.25, 10.0, 0.125),
    "openai:gpt-5-mini": Price(0.25, 2.0, 0.025),
    "openai:gpt-5-nano": Price(0.05, 0.40, 0.005),
    "openai:gpt-4.1": Price(2.0, 8.0, 0.5),
    "openai:gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "openai:gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "openai:gpt-4o": Price(2.50, 10.0, 1.25),
    "openai:gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "openai:o3": Price(2.0, 8.0, 0.5),
    "openai:o4-mini": Price(1.10, 4.40, 0.275),
    "anthropic:claude-opus-4-5": Price(5.0, 25.0, 0.50),
    "anthropic:claude-opus-4-1": Price(15.0, 75.0, 1.50),
    "anthropic:claude-sonnet-4-5": Price(3.0, 15.0, 0.30),
    "anthropic:claude-sonnet-4": Price(3.0, 15.0, 0.30),
    "anthropic:claude-haiku-4-5": Price(1.0, 5.0, 0.10),
    "anthropic:claude-3-5-haiku": Price(0.80, 4.0, 0.08),
}
"""Entries are keyed `provider:model`; `openai-responses:` models use the `openai:` prices.

List prices as published when this table was written: check them against the
provider's pricing page and override what has changed (`STALWART_PRICES`).
"""

_ALIASES = {"openai-responses": "openai"}
_DATED = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def register_price(model: str, price: Price) -> None:
    """Add or replace the price of a model (`provider:model`)."""
    PRICES[model] = price


def load_prices(path: str | Path) -> None:
    """Add the prices of a JSON file: `{"provider:model": {"input": ..., "output": ..., "cached_input": ...}}`."""
    try:
        table = json.loads(Path(path).read_text())
        for model, fields in table.items():
            register_price(model, Price(**fields))
    except (OSError, ValueError, TypeError) as err:
        raise ModelConfigError(
            f"cannot read the price table {path} ({err}). It must be JSON like "
            f'{{"openai:my-model": {{"input": 1.0, "output": 2.0}}}} (dollars per million tokens).'
        ) from err


def price_of(model: str) -> Price | None:
    """The price of `provider:model`: its own entry, else its alias's (`openai-responses:` -> `openai:`), else the
    base entry of a dated name (`claude-haiku-4-5-20251001`, `gpt-4.1-2025-04-14`)."""
    _load_env_file()
    provider, _, name = model.partition(":")
    alias = f"{_ALIASES.get(provider, provider)}:{name}" if name else provider
    for key in (model, alias, _DATED.sub("", alias)):
        if key in PRICES:
            return PRICES[key]
    if provider in SELF_HOSTED:
        return Price(0.0, 0.0)
    return None


_loaded_file: tuple[str, int] | None = None
"""The `STALWART_PRICES` file last loaded, with its mtime: it is read again only when either changes."""


def _load_env_file() -> None:
    global _loaded_file
    path = os.environ.get(PRICES_ENV)
    if not path:
        return
    try:
        stamp: tuple[str, int] | None = (path, os.stat(path).st_mtime_ns)
    except OSError:
        stamp = None  # load_prices raises the error that says what is wrong
    if stamp is not None and stamp == _loaded_file:
        return
    load_prices(path)
    _loaded_file = stamp


def price_for(agent: AgentSpec) -> Price | None:
    """The price of the agent's model, looked up once per turn before the paid call: ModelConfigError when the agent
    has a cost budget but its model has no price."""
    price = price_of(agent.model)
    capped = "budgets.max_cost_usd" if agent.budgets.max_cost_usd is not None else None
    capped = capped or ("session.max_cost_usd" if agent.session.max_cost_usd is not None else None)
    if price is None and capped is not None:
        raise ModelConfigError(
            f"agent {agent.name!r} has {capped} but Stalwart knows no price for {agent.model!r}. "
            f"Add it to a JSON price table named by {PRICES_ENV} on the worker, or remove the cost budget."
        )
    return price


def with_cost(usage: Usage, price: Price | None) -> Usage:
    """`usage` with its cost at `price` (unchanged for an unpriced model)."""
    return usage if price is None else usage.model_copy(update={"cost_usd": price.cost(usage)})
