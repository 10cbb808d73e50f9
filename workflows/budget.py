"""One budget: the limits of a turn, what it has spent, and what is left.

A plain run is one turn. In a session, step, wall-clock, token and cost limits apply to
each turn, and `[session] max_cost_usd` caps what the session spends over its life. The
workflow asks this type which limit, if any, stops the next step; delegation asks it what a
sub-agent may still spend; the search attributes read its totals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import Usage
from stalwart.contracts.run import StopReason


@dataclass
class Budget:
    """What one turn may spend and has spent; `lifetime` is the whole chain's spending."""

    agent: AgentSpec
    started_at: datetime
    deadline: datetime | None
    steps_taken: int = 0
    spent: Usage = field(default_factory=Usage)
    lifetime: Usage = field(default_factory=Usage)
    held: Usage = field(default_factory=Usage)
    """Held back for sub-agents still running: they may spend up to this, so siblings may not."""

    def charge(self, usage: Usage) -> None:
        self.spent = self.spent + usage
        self.lifetime = self.lifetime + usage

    def exhausted(self) -> StopReason | None:
        """The limit that forbids another model step, if one does."""
        limits = self.agent.budgets
        if self.steps_taken >= limits.max_steps:
            return "max_steps"
        if limits.max_tokens is not None and self.spent.total_tokens >= limits.max_tokens:
            return "max_tokens"
        if limits.max_cost_usd is not None and self.spent.cost_usd >= limits.max_cost_usd:
            return "max_cost"
        if self.lifetime_cost_reached():
            return "max_cost"
        return None

    def lifetime_cost_reached(self) -> bool:
        cap = self.agent.session.max_cost_usd
        return cap is not None and self.lifetime.cost_usd >= cap

    def remaining_tokens(self) -> int | None:
        limit = self.agent.budgets.max_tokens
        return None if limit is None else max(limit - (self.spent + self.held).total_tokens, 0)

    def remaining_cost_usd(self) -> float | None:
        limits = [
            cap - spent.cost_usd
            for cap, spent in (
                (self.agent.budgets.max_cost_usd, self.spent + self.held),
                (self.agent.session.max_cost_usd, self.lifetime + self.held),
            )
            if cap is not None
        ]
        return max(min(limits), 0.0) if limits else None

    def remaining_seconds(self, now: datetime) -> float | None:
        return None if self.deadline is None else max((self.deadline - now).total_seconds(), 0.0)
