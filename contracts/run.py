"""A run of an agent as it is recorded: its audit trail, its state and its result.

What a run starts with (the agent spec, the goal, what continue-as-new carries) is in `run_input.py`: reading a
run's record (`stalwart show`) needs none of the agent spec's contracts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import Field, PydanticUserError, TypeAdapter, ValidationError

from stalwart.contracts.errors import RunFailed
from stalwart.contracts.messages import StoredContent, TranscriptRef, Usage
from stalwart.contracts.model import Contract
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
    "terminated",
    "timed_out",
    "failed",
]
"""`waiting`: a session between messages. The last three are Temporal's, for a run it closed without a result: ended
from outside (`temporal workflow terminate`, an execution timeout) or failed as a workflow (an input it refused)."""
StepRole = Literal["user", "assistant", "tool"]
_T = TypeVar("_T")


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
    budget_answer: str | None = None
    """On the last record of a turn a budget stopped with an answer no step gave (`Reached maximum reasoning steps
    (N)`, or the last answer `[output]` sent back): that answer, which the events give as the turn's
    `agent_response`. The run's `answer` is only its latest turn's: a session's earlier turns have theirs here."""
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
    transcript: TranscriptRef | None = None
    """The stored conversation, which holds the texts of the steps `from_transcript` names."""
    from_transcript: dict[int, int] = Field(default_factory=dict)
    """Steps whose `content` is left out, by index in `steps`, with the position of their message in `transcript`:
    the activity reads each text from there, so a run's texts do not travel through this input (over the
    external-storage threshold, it would store them a second time) on their way to the archive."""


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
    """Cycles, tokens, latency per tool and totals, so far; `RunHandle.state()` fills them in."""
    offline: str | None = None
    """Set when no worker answered the live query: this state was rebuilt from the run's history, and says why."""
    output: Any | None = None
    """The latest answer's validated JSON, for an agent with `[output]` (`AgentResult.output`)."""
    waiting: str | None = None
    """What the run waits out right now on a durable timer, if anything: a provider's Retry-After, who asked, how
    long, until when (`stalwart show` and `run` say it; nothing else would for minutes)."""
    notes: list[RunNote] = Field(default_factory=list)
    """What was sent to the run that it could not use (a signal with arguments it does not take), newest last: the
    latest few, each short, what came shown escaped."""


class ToolMetrics(Contract):
    """One tool's calls in a run: how many, how they ended, how long they took."""

    calls: int = 0
    successes: int = 0
    errors: int = 0
    total_seconds: float = 0.0
    average_seconds: float = 0.0


class RunMetrics(Contract):
    """What a run measures of itself: cycles (model calls), tokens, latency per tool, totals."""

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
    turns: int | None = None
    """Messages the whole chain answered (a plain run has one turn); None in a turn's result, and in results
    recorded before it was written."""
    runs: int | None = None
    """Runs of the continue-as-new chain, this one included; None as `turns` is."""
    output: Any | None = None
    """For an agent that declares `[output]`: the answer as the JSON value that validated against its schema (of
    the turn, for a session's turn); `answer` keeps the model's text. None without `[output]`, or when no valid
    answer came (`error` then says what did not validate)."""

    def output_as(self, tp: type[_T]) -> _T:
        """`output` as an instance of `tp` (a pydantic model, a dataclass, `list[int]` ...), validated by pydantic.

        Raises `OutputNotOfType` when the answer, valid against the agent's JSON Schema, does not fit `tp`, and
        `OutputTypeError` when `tp` is no type pydantic validates."""
        from stalwart.contracts.output_schema import check_output_type, schema_of

        check_output_type(tp)  # before pydantic, which would call a function given as the type
        try:
            return TypeAdapter(tp).validate_python(self.output)
        except (ValidationError, PydanticUserError) as err:
            schema_of(tp)  # `OutputTypeError` for a type no answer can fit (a `Callable`)
            if isinstance(err, ValidationError):
                raise OutputNotOfType(tp, err) from err
            raise

    def with_output_as(self, tp: type[Any] | None) -> AgentResult:
        """This result with `output` as an instance of `tp` (see `output_as`); itself without a type or an output."""
        if tp is None or self.output is None:
            return self
        return self.model_copy(update={"output": self.output_as(tp)})


class OutputNotOfType(RunFailed, ValueError):
    """The run's answer is valid against the agent's output schema but not an instance of the type asked for.

    The run checks the answer against the JSON Schema and asks the model again while it does not fit; what the
    schema does not say (a pydantic validator, a `format` such as a date, another type than the agent's) is checked
    only when the result is read as the type, when the run is over and the model cannot be asked again."""

    def __init__(self, tp: Any, err: ValidationError) -> None:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'the answer'}: {e['msg']}"
            for e in err.errors(include_url=False)
        )
        name = getattr(tp, "__name__", None) or repr(tp)
        super().__init__(
            f"the agent's answer fits its output schema but not {name} ({problems}): say that rule in the schema "
            "(a Field constraint, a Literal, an enum), which the model is held to and asked again on, or read the "
            "answer as a type that takes it"
        )


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
"""The memory events (docs/concepts.md), and `progress`: the block announcing an action before it runs."""


class RunEvent(Contract):
    """The run's audit trail as memory events (`EventType`).

    `event_id` names the event by its place in the run's step log, so it stays the same however often
    the log is read: a consumer that sees an event twice can tell.
    """

    event_id: str
    timestamp: datetime
    event_type: EventType
    content: Any
    metadata: dict[str, Any] = Field(default_factory=dict)


NOTES_KEPT = 20
"""Notes a run keeps: the latest, so a client sending junk in a loop cannot grow its state (the workflow and a
run read from history without a worker keep the same ones)."""


class RunNote(Contract):
    """Something sent to the run that it could not use, such as a signal with arguments it does not take: a
    signal's sender is told nothing, so the run keeps this note (`RunState.notes`, an `error` event)."""

    number: int
    """Counts the run's notes from 1: a note keeps its number while older ones are dropped."""
    at: datetime
    text: str

    def as_event(self) -> RunEvent:
        return RunEvent(event_id=f"evt-note-{self.number}", timestamp=self.at, event_type="error", content=self.text)


def run_metrics(steps: list[StepRecord], earlier: RunMetrics | None = None, elapsed_seconds: float = 0.0) -> RunMetrics:
    """The run's metrics from the step log (after `earlier`, the metrics of archived steps)."""
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
    """The progress block announcing an action: `{"type": "progress", "step": i, "max_steps": N, "action": "tool_call" |
    "delegate", "target": name}`; `step` is the model call that asked for the action."""
    return {
        "type": "progress",
        "step": step.step,
        "max_steps": max_steps,
        "action": "delegate" if step.tool_kind == "agent" else "tool_call",
        "target": step.tool_name,
    }
