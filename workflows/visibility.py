"""Visibility: what the run list and the UI show of a run while it runs.

The run list reads Stalwart's search attributes (name, status, counters, whether a call awaits approval); the UI
shows the run's current details. Each upsert is a history event and a visibility write, so only what changed
goes out, and the step, token and cost counters alone go out at most every `policies.COUNTERS_EVERY`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.run import NOTES_KEPT, RunNote, RunStatus
    from stalwart.contracts.run_input import RunInput
    from stalwart.contracts.shown_goal import IN_CURRENT_DETAILS, shown_goal
    from stalwart.workflows import patches, policies
    from stalwart.workflows.chain import Chain

_COUNTERS = frozenset(key.name for key in (names.AGENT_STEPS, names.AGENT_TOKENS, names.AGENT_COST_USD))


def _search_attributes_at_start() -> dict[str, object]:
    """Stalwart's search attributes this run started with, all set by `StalwartClient` when it starts a run.

    Upserting them again would cost a history event and a visibility write for nothing; a run started without
    them (another SDK, a sub-agent, an older client) upserts what it lacks."""
    attrs = workflow.info().typed_search_attributes
    values = {key.name: attrs.get(key) for key in names.SEARCH_ATTRIBUTES}
    return {name: value for name, value in values.items() if value is not None}


def listed_waiting_while_open() -> bool:
    """Whether this session is listed `waiting` throughout (`Visibility.listed_status`): sessions recorded
    before published `running` and `waiting` at every turn."""
    return patches.active(patches.SESSION_LISTED_WAITING_WHILE_OPEN)


class Visibility:
    """The run's status, and its search attributes and current details kept in step with the run."""

    def __init__(self, input: RunInput, chain: Chain, awaiting_approval: Callable[[], bool]) -> None:
        self._input = input
        self._chain = chain
        self._awaiting_approval = awaiting_approval
        self.status: RunStatus = "running"
        self.waiting: str | None = None
        """What the run waits out right now on a durable timer (a provider's Retry-After): who, how long, until when."""
        self.notes: list[RunNote] = []
        """What was sent to the run that it could not use (a signal it cannot read), newest last."""
        # A continued run upserts everything once.
        self._published = {} if chain.continued else _search_attributes_at_start()
        self._published_at: datetime | None = workflow.now() if self._published else None

    def publish(self) -> None:
        """Keep the search attributes and the UI's current details in step with the run."""
        current = self._attributes()
        changed = self._unpublished(current)
        if changed and not self._counters_wait(changed):  # each upsert is a history event: send only what changed
            workflow.upsert_search_attributes([key.value_set(current[key]) for key in changed])
            self._published.update({key.name: value for key, value in current.items()})
            self._published_at = workflow.now()
        self._show_details()

    def note(self, text: str) -> None:
        """Keep `text`, something sent to the run that it could not use, where `state` and the UI show it.

        Only the current details change: they are no history event, so a note leaves the history as it was
        (a run recorded before notes replays as it ran). The last `NOTES_KEPT` notes are kept."""
        number = self.notes[-1].number + 1 if self.notes else 1
        self.notes = [*self.notes, RunNote(number=number, at=workflow.now(), text=text)][-NOTES_KEPT:]
        self._show_details()

    def waiting_out(self, what: str | None) -> None:
        """The run begins (`what`) or ends (None) a wait nothing else shows: the current details say it, and so
        does `state`. No history event, as for notes."""
        self.waiting = what
        self._show_details()

    def _show_details(self) -> None:
        state, steps, agent = self._chain.state, self._chain.steps, self._input.agent
        last = steps[-1] if steps else None
        turns = f" · turn {state.turns}" if self._input.session else ""
        # The UI's static summary can only be set by whoever starts the run (StalwartClient does); a run started
        # from the `temporal` CLI or another SDK still shows its agent and goal here, set by the workflow itself.
        what = "session" if self._input.session else f"goal: {shown_goal(self._input.goal, IN_CURRENT_DETAILS)}"
        workflow.set_current_details(
            f"**{agent.name}** · {self.status}{turns} · step {state.step} · "
            f"{state.usage.total_tokens} tokens\n\n{what}\n\n"
            f"last: {last.role + ' ' + (last.tool_name or '') if last else '-'}"
            + (f"\n\nwaiting: {self.waiting}" if self.waiting else "")
            + (f"\n\nnote: {self.notes[-1].text}" if self.notes else "")
        )

    def approvals_changed(self, waiting: bool) -> None:
        """A call began or stopped waiting for approval; `waiting` says whether any still does."""
        self.status = "awaiting_approval" if waiting else "running"
        self.publish()

    def counters_due(self) -> datetime | None:
        """When the counters held back by `_counters_wait` may go out; None if none are held back."""
        if self._published_at is None or not self._unpublished(self._attributes()):
            return None
        return self._published_at + policies.COUNTERS_EVERY

    def _counters_wait(self, changed: list[SearchAttributeKey[Any]]) -> bool:
        """Whether only the step, token and cost counters changed, and too recently to upsert them again.

        An upsert per step cost a third of a step's time (a history event and a visibility write each), for
        counters nobody reads at that pace: they go out with the next change of status (every turn's end and
        the run's end are one) or after `policies.COUNTERS_EVERY`.
        """
        if any(key.name not in _COUNTERS for key in changed):
            return False
        if self._published_at is not None and workflow.now() - self._published_at >= policies.COUNTERS_EVERY:
            return False
        return patches.active(patches.SEARCH_ATTRIBUTE_COUNTERS_THROTTLED)  # runs recorded before upsert every step

    def _listed_status(self) -> RunStatus:
        """The status the run list shows: an open session is `waiting` (for messages) even while a turn runs.

        Publishing each turn's `running` and `waiting` cost a session turn two upserts, a quarter of its time
        (bench/step_cost.py); whether a turn is running right now is live in `stalwart show` and the UI's
        current details instead. Approvals and the session's end are still published."""
        if self._input.session and self.status == "running" and listed_waiting_while_open():
            return "waiting"
        return self.status

    def _attributes(self) -> dict[SearchAttributeKey[Any], Any]:
        state = self._chain.state
        return {
            names.AGENT_NAME: self._input.agent.name,
            names.AGENT_STATUS: self._listed_status(),
            names.AGENT_STEPS: state.step,
            names.AGENT_TOKENS: state.usage.total_tokens,
            names.AGENT_COST_USD: state.usage.cost_usd,
            names.AGENT_AWAITING_APPROVAL: self._awaiting_approval(),
        }

    def _unpublished(self, current: dict[SearchAttributeKey[Any], Any]) -> list[SearchAttributeKey[Any]]:
        return [key for key, value in current.items() if self._published.get(key.name) != value]
