"""What the Temporal UI shows of a new run, and its first search attributes: the same whoever starts it.

A client (`StalwartClient`) and a user's workflow (`stalwart.workflow.start_agent`) start runs alike, so every run
is listed and described the same way.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributePair, TypedSearchAttributes

from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.shown_goal import IN_STATIC_DETAILS, shown_goal


def start_metadata(spec: AgentSpec, what: str, *, status: str, by: str | None = None) -> dict[str, Any]:
    """`static_summary`, `static_details` and `search_attributes` of a run of `spec` about `what` (its goal).

    The goal is already in the input: the UI gets a shortened copy, not a second whole one. Every search attribute
    the workflow keeps is set here, so its first workflow task has nothing to upsert. `by` says who started it
    (a user's workflow), shown in the details.
    """
    shown = shown_goal(what, IN_STATIC_DETAILS)
    started_by = f" · started by {by}" if by else ""
    return {
        "static_summary": f"{spec.name}: {what}"[:400],
        "static_details": f"**Agent** `{spec.name}` · model `{spec.model}`{started_by}\n\n**Goal**\n\n{shown}",
        "search_attributes": TypedSearchAttributes(
            [
                SearchAttributePair(names.AGENT_NAME, spec.name),
                SearchAttributePair(names.AGENT_STATUS, status),
                SearchAttributePair(names.AGENT_STEPS, 0),
                SearchAttributePair(names.AGENT_TOKENS, 0),
                SearchAttributePair(names.AGENT_COST_USD, 0.0),
                SearchAttributePair(names.AGENT_AWAITING_APPROVAL, False),
            ]
        ),
    }
