"""What a run starts with: the agent spec, the goal, its inputs, and (for a run continued as new) its chain's state.

Kept apart from the run's record (`run.py`) so that reading a finished run does not build the agent spec's
contracts, the largest of them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from stalwart.contracts.agent import DEFAULT_MAX_MESSAGE_CHARS, MAX_MESSAGE_CHARS, AgentSpec
from stalwart.contracts.messages import Message, TranscriptRef, Usage
from stalwart.contracts.model import Contract
from stalwart.contracts.run import RunMetrics, StepArchive
from stalwart.contracts.tools import ToolSpec


class RunInput(Contract):
    """The workflow input: the whole agent spec, the goal, and named inputs for tool bindings.

    With `session`, the run stays open after its answer and takes further messages; its
    goal, if any, is the first message.
    """

    # Said in the schema only: a run started afresh refuses a field it does not take (workflows/arguments.py), while
    # the input of a run continued as new may still carry one an earlier release wrote, and must be read.
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    agent: AgentSpec
    goal: str = Field(
        "",
        description=(
            "At most the agent's `[session] max_message_chars` characters (default 10,000,000), like any message."
        ),
    )
    inputs: dict[str, Any] = Field(default_factory=dict)
    session: bool = False
    deadline: datetime | None = None
    """No call of this run starts after this instant (UTC), whatever its own `max_seconds`, and one still running is
    cancelled within 5 s of it (the grace that lets a parent agent, whose own timer fires at the same instant, cancel
    the run first): the earliest deadline of the runs that started it (a parent agent's, a user's workflow's). The
    chain keeps it across continue-as-new (`ChainState.deadline`)."""

    @model_validator(mode="after")
    def _goal_fits(self) -> RunInput:
        problem = goal_problem(self.goal, self.agent)
        if problem:
            raise ValueError(problem)
        return self


class ContinuedRunInput(RunInput):
    """What the workflow reads as its input: a `RunInput`, and for a run continued as new its chain's state.

    Only continue-as-new writes `carried` (under that key, so runs continued by any release read alike); a run
    started afresh has none. Apart from the public `RunInput` so that its schema offers callers only what they
    give."""

    model_config = ConfigDict(title="RunInput")  # a validation error names the input as callers know it

    carried: ChainState | None = None

    @model_validator(mode="after")
    def _carried_turn_has_its_budget(self) -> ContinuedRunInput:
        turn = self.carried.turn if self.carried else None
        inherited = self.deadline or (self.carried.deadline if self.carried else None)
        own = self.agent.budgets.max_seconds
        if turn is not None and turn.deadline is not None and own is None and inherited is None:
            raise ValueError(
                "`carried.turn` has a deadline but the agent has no `max_seconds` and the run no `deadline`: "
                "a chain's state must come from the run that continued as new with this agent"
            )
        return self


def missing_goal(goal: str, *, session: bool) -> str | None:
    """Why a run cannot start without a goal, if it cannot: a session starts with none and waits for messages."""
    if session or goal.strip():
        return None
    return "a run needs a goal: give the task as text (`goal`), or start a session to send messages"


def message_problem(text: str, agent: AgentSpec | None) -> str | None:
    """Why a session of `agent` refuses the message `text` whatever its state, if it does: empty, or over its limit
    (which an unknown `agent`, None, does not say)."""
    if not text.strip():
        return "the message is empty: send some text"
    limit = agent.session.max_message_chars if agent is not None else None
    if limit is not None and len(text) > limit:
        return f"the message has {len(text):,} characters, over this agent's [session] max_message_chars={limit:,}"
    return None


def goal_problem(goal: str, agent: AgentSpec) -> str | None:
    """Why `goal` is too long for `agent`, if it is.

    The goal travels in the run's input and again in its first model call (and a session's first
    message is its goal), so it obeys the same limit as every message: `[session] max_message_chars`.
    """
    limit = agent.session.max_message_chars
    if len(goal) <= limit:
        return None
    return (
        f"the goal has {len(goal):,} characters, over agent {agent.name!r}'s limit of {limit:,} "
        f"([session] max_message_chars, default {DEFAULT_MAX_MESSAGE_CHARS:,}); shorten it, pass large material "
        "as a run input or a file a tool reads, or raise max_message_chars in the agent file "
        f"(at most {MAX_MESSAGE_CHARS:,})"
    )


class QueuedMessage(Contract):
    """A message to a session that no model call has read yet."""

    id: str
    text: str
    received_at: datetime


_INT64_MAX = 2**63 - 1


class ChainState(Contract):
    """Everything the next run of a chain needs after continue-as-new: nothing the model or user saw changes.

    The workflow holds its chain's state in one object of this type from the start (`workflows/chain.py`), and
    continue-as-new writes that object whole: a field added here is carried without another line."""

    chain_id: str
    """The first run's id: the conversation and step archives are stored under it for the whole chain."""
    deadline: datetime | None = None
    """The first run's `RunInput.deadline`, inherited from the runs that started the chain: each turn's deadline is
    the earlier of its own `max_seconds` and this."""
    runs: int = Field(ge=0)
    """How many runs the chain had before this one."""
    started_at: datetime
    step: int = Field(ge=0, le=_INT64_MAX)
    usage: Usage
    transcript: TranscriptRef
    context_ref: str | None = None
    unsent: list[Message] = Field(default_factory=list)
    """Messages recorded for the model but not yet sent to it."""
    queued: list[QueuedMessage] = Field(default_factory=list)
    earlier_results: dict[str, tuple[int, str]] = Field(default_factory=dict)
    archives: list[StepArchive] = Field(default_factory=list)
    closing: bool = False
    """`close` arrived while the session was continuing as new."""
    turns: int = Field(0, ge=0)
    turn: TurnInProgress | None = None
    answer: str | None = None
    output: Any = None
    """The latest turn's answer as the JSON value that validated against `[output]` (typed output); None without."""
    tools: list[ToolSpec] | None = None
    """The tools as described when the chain began: the model sees the same list in every run. None until the
    first run has described them; continue-as-new always carries a list."""
    metrics: RunMetrics | None = None
    """The metrics of the steps earlier runs archived (their steps are not carried)."""

    @model_validator(mode="after")
    def _counts_fit_search_attributes(self) -> ChainState:
        """The chain's counts are published as int64 search attributes: past that, every workflow task fails."""
        usage = self.usage
        if not all(0 <= count <= _INT64_MAX for count in (usage.input_tokens, usage.output_tokens, usage.total_tokens)):
            raise ValueError(
                "`carried.usage` holds a token count outside 0 to 2**63-1, which no chain's state can hold: "
                "the chain's counts are published as int64 search attributes"
            )
        return self


class TurnInProgress(Contract):
    """A turn cut by continue-as-new between two of its steps; the next run goes on with it."""

    number: int
    first_record: int
    """Where the turn's records begin in the step log."""
    started_at: datetime
    deadline: datetime | None = None
    usage: Usage = Field(default_factory=Usage)
    steps_taken: int = 0
    nudges: int = 0
    """Persistence prompts sent this turn (`[loop] persistence_nudges`)."""
    output_retries: int = 0
    """Answers sent back this turn for not validating against `[output]` (`[output] retries`)."""
    output: Any = None
    """The turn's answer as the JSON value that validated against `[output]` (typed output)."""
