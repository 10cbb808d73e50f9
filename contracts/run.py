"""A run of an agent: its input, its audit trail and its result."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from stalwart.contracts.agent import DEFAULT_MAX_MESSAGE_CHARS, MAX_MESSAGE_CHARS, AgentSpec
from stalwart.contracts.messages import Message, StoredContent, TranscriptRef, Usage
from stalwart.contracts.model import Contract
from stalwart.contracts.tools import ToolSpec
from stalwart.contracts.wire import Compact

StopReason = Literal[
    "done", "max_steps", "max_seconds", "max_tokens", "max_cost", "cancelled", "error", "closed", "idle"
]
"""Why a run (or one turn of a session) stopped; `closed` and `idle` end sessions only."""
RunStatus = Literal[
    "running",
    "awaiting_approval",
    "waiting",
    "done",
    "max_steps",
    "max_seconds",
    "max_tokens",
    "max_cost",
    "cancelled",
    "error",
    "closed",
    "idle",
]
"""`waiting`: a session between messages."""
StepRole = Literal["user", "assistant", "tool"]


class RunInput(Contract):
    """The workflow input: the whole agent spec, the goal, and named inputs for tool bindings.

    With `session`, the run stays open after its answer and takes further messages; its
    goal, if any, is the first message. `carried` is set only by continue-as-new.
    """

    agent: AgentSpec
    goal: str = Field(
        "",
        description=(
            "At most the agent's `[session] max_message_chars` characters (default 10,000,000), like any message."
        ),
    )
    inputs: dict[str, Any] = Field(default_factory=dict)
    session: bool = False
    carried: Carried | None = None

    @model_validator(mode="after")
    def _goal_fits(self) -> RunInput:
        problem = goal_problem(self.goal, self.agent)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _carried_turn_has_its_budget(self) -> RunInput:
        turn = self.carried.turn if self.carried else None
        if turn is not None and turn.deadline is not None and self.agent.budgets.max_seconds is None:
            raise ValueError(
                "`carried.turn` has a deadline but the agent has no `max_seconds`: `carried` is written by "
                "Stalwart's continue-as-new; leave it out of a run you start"
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


class _AgentName(Contract):
    name: str


class RunHeading(Contract):
    """What a finished run's state shows of its input: read without the agent spec's validator, the largest of
    the contracts, which `stalwart show` would otherwise build only to print the agent's name."""

    agent: _AgentName
    goal: str = ""
    session: bool = False


class StepRecord(Contract):
    """One entry of the audit trail: a model turn, a tool call, or the goal itself (step 0)."""

    step: int
    role: StepRole
    content: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_kind: str | None = None
    """`function`, `mcp`, `agent` (a delegation to another agent) ..."""
    arguments: dict[str, Any] | None = None
    result: str | None = None
    error: str | None = None
    started_at: datetime
    ended_at: datetime | None = None
    usage: Usage = Field(default_factory=Usage)
    final: bool = False
    """Set on the assistant turn whose text is the run's answer."""
    summary: bool = False
    """Set on a model call that summarised the older conversation (context strategy `summarize`); its text is the
    summary, which replaced those messages in what the model is sent. It is not one of the `max_steps`."""
    stop_reason: str | None = None
    """For a model turn: why the model stopped, in the provider's words (`end_turn`, `length`, `max_tokens` ...)."""
    result_stored: StoredContent | None = None
    """Where the tool activity stored this (large) result. An archived step log refers to it there instead of
    holding `result` again; reading the archive fills `result` back in."""

    @property
    def finished(self) -> bool:
        return self.ended_at is not None

    def archived(self) -> ArchivedStep:
        """This step as an archive keeps it: a stored result named, not repeated; empty fields left out."""
        fields = dict(self)
        if self.result_stored is not None:
            fields["result"] = None
        return ArchivedStep.model_construct(**fields)


class StepArchive(Contract):
    """Steps of earlier runs of a continue-as-new chain, kept in storage instead of carried forward.

    Carrying the whole step log into every run would store it again at each boundary, which
    grows with the square of the run's length. `RunHandle.state()` and `result()` read these back,
    so a Python caller sees the whole log; other clients read `earlier` and fetch them from storage.
    """

    key: str
    count: int


class ArchivedStep(StepRecord, Compact):
    """A step on its way to an archive: its empty fields are left out (`contracts/wire.py`)."""


class ArchiveStepsRequest(Contract):
    chain_id: str
    index: int
    steps: list[ArchivedStep]


class RunState(Contract):
    """What the `state` query returns while a run is going, and after."""

    agent: str
    goal: str
    status: RunStatus
    steps: list[StepRecord]
    usage: Usage
    answer: str | None = None
    error: str | None = None
    session: bool = False
    turns: int = 0
    """Messages answered so far (a plain run has one turn)."""
    queued: int = 0
    """Messages received and not yet read by the model."""
    runs: int = 1
    """Runs of the continue-as-new chain so far, this one included."""
    earlier: list[StepArchive] = Field(default_factory=list)
    """Steps of earlier runs of the chain, in storage; they come before `steps`."""
    metrics: RunMetrics | None = None
    """Cycles, tokens, latency per tool and totals (seed 002), so far; `RunHandle.state()` fills them in."""
    offline: str | None = None
    """Set when no worker answered the live query: this state was rebuilt from the run's history, and says why."""


class ToolMetrics(Contract):
    """One tool's calls in a run: how many, how they ended, how long they took (Strands' `tool_metrics`)."""

    calls: int = 0
    successes: int = 0
    errors: int = 0
    total_seconds: float = 0.0
    average_seconds: float = 0.0


class RunMetrics(Contract):
    """What the Strands loop collects at the end of a run (seed 002): cycles, tokens, latency per tool, totals."""

    cycles: int = 0
    """Model calls of the loop (Strands' event-loop cycles)."""
    model_seconds: float = 0.0
    """Time spent waiting for the model, over all cycles (retries included)."""
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    tool_calls: int = 0
    tool_seconds: float = 0.0
    """Time tool calls took, added up (calls that ran at once each count in full)."""
    tools: dict[str, ToolMetrics] = Field(default_factory=dict)
    """Per tool (delegations by the sub-agent's name)."""
    elapsed_seconds: float = 0.0
    """Wall-clock time of the run (of the turn, in a turn's result)."""


class AgentResult(Contract):
    """The workflow result: the answer, why the run stopped, and everything it did."""

    answer: str
    stop_reason: StopReason
    steps: list[StepRecord]
    usage: Usage
    elapsed_seconds: float
    error: str | None = None
    earlier: list[StepArchive] = Field(default_factory=list)
    """Steps of earlier runs of the chain, in storage; they come before `steps` (`RunHandle.result()` joins them)."""
    metrics: RunMetrics | None = None
    """Cycles, tokens, latency per tool and totals of the run (of the turn, for a session's turn)."""
    budget_fired_after_seconds: float | None = None
    """With stop reason `max_seconds`: when the wall-clock budget fired, in seconds after the start. The run
    stopped doing work then; `elapsed_seconds` is later when no worker was running at the deadline to record it."""


EventType = Literal[
    "user_message",
    "tool_call",
    "tool_result",
    "tool_error",
    "delegation_request",
    "delegation_response",
    "delegation_error",
    "agent_response",
    "error",
    "progress",
]
"""The KAOS memory events (seed 000), and `progress`: the block announcing an action before it runs."""


class RunEvent(Contract):
    """The run's audit trail in the KAOS memory-event vocabulary.

    `event_id` names the event by its place in the run's step log, so it stays the same however often
    the log is read: a consumer that sees an event twice can tell.
    """

    event_id: str
    timestamp: datetime
    event_type: EventType
    content: Any
    metadata: dict[str, Any] = Field(default_factory=dict)


class QueuedMessage(Contract):
    """A message to a session that no model call has read yet."""

    id: str
    text: str
    received_at: datetime


_INT64_MAX = 2**63 - 1


class Carried(Contract):
    """Everything the next run of a chain needs after continue-as-new: nothing the model or user saw changes."""

    chain_id: str
    """The first run's id: the conversation and step archives are stored under it for the whole chain."""
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
    tools: list[ToolSpec] = Field(default_factory=list)
    """The tools as described when the chain began: the model sees the same list in every run."""
    metrics: RunMetrics | None = None
    """The metrics of the steps earlier runs archived (their steps are not carried)."""

    @model_validator(mode="after")
    def _counts_fit_search_attributes(self) -> Carried:
        """The chain's counts are published as int64 search attributes: past that, every workflow task fails."""
        usage = self.usage
        if not all(0 <= count <= _INT64_MAX for count in (usage.input_tokens, usage.output_tokens, usage.total_tokens)):
            raise ValueError(
                "`carried.usage` holds a token count outside 0 to 2**63-1: `carried` is written by Stalwart's "
                "continue-as-new; leave it out of a run you start"
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


def run_metrics(steps: list[StepRecord], earlier: RunMetrics | None = None, elapsed_seconds: float = 0.0) -> RunMetrics:
    """Seed 002's end-of-run metrics from the step log (after `earlier`, the metrics of archived steps)."""
    out = (earlier or RunMetrics()).model_copy(deep=True)
    for step in steps:
        took = (step.ended_at - step.started_at).total_seconds() if step.ended_at is not None else 0.0
        if step.role == "assistant":
            out.cycles += 1
            out.model_seconds += took
            out.input_tokens += step.usage.input_tokens
            out.output_tokens += step.usage.output_tokens
        elif step.role == "tool" and step.ended_at is not None:
            tool = out.tools.setdefault(step.tool_name or "?", ToolMetrics())
            tool.calls += 1
            tool.errors += step.error is not None
            tool.successes += step.error is None
            tool.total_seconds += took
            tool.average_seconds = tool.total_seconds / tool.calls
            out.tool_calls += 1
            out.tool_seconds += took
    out.total_tokens = out.input_tokens + out.output_tokens
    out.elapsed_seconds = elapsed_seconds
    return out


def progress_block(step: StepRecord, max_steps: int) -> dict[str, object]:
    """Seed 000's block before an action: `{"type": "progress", "step": i, "max_steps": N, "action": "tool_call" |
    "delegate", "target": name}`; `step` is the model call that asked for the action."""
    return {
        "type": "progress",
        "step": step.step,
        "max_steps": max_steps,
        "action": "delegate" if step.tool_kind == "agent" else "tool_call",
        "target": step.tool_name,
    }
