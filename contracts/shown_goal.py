"""How much of a goal the Temporal UI shows of a run: the goal is whole in the run's input, and may be long.

A client writes the shortened goal into a run's static details as it starts it, and the workflow into its current
details on each step; both cut it the same way, at their own length.
"""

from __future__ import annotations

IN_STATIC_DETAILS = 2000
"""Characters of the goal in the static details, written once by whoever starts the run."""

IN_CURRENT_DETAILS = 200
"""Characters of the goal in the current details, rewritten by the workflow beside its counters on each step."""


def shown_goal(goal: str, chars: int) -> str:
    """`goal` as it is when it has at most `chars` characters, else its first `chars` followed by " …"."""
    return goal if len(goal) <= chars else goal[:chars] + " …"
