"""Pure functions over a run's conversation and step log (no I/O, safe in workflow code)."""

from __future__ import annotations

from stalwart.contracts import patterns
from stalwart.contracts.agent import LoopSettings
from stalwart.contracts.messages import Message
from stalwart.contracts.run import RunEvent, StepRecord, progress_block, run_metrics
from stalwart.contracts.tools import ToolSpec

MAX_STEPS_ANSWER = "Reached maximum reasoning steps ({n})"
FINAL_RESPONSE_PROMPT = "Now provide your final response to the user."
MALFORMED_ACTION = "malformed action, sent back to the model: {feedback}"
"""The `error` of a model step whose reply held a malformed action (text protocols): the note the model is sent,
which names what was wrong. Without it the step log would show model steps alike until `max_steps`, saying nothing."""
FINALIZE_PROMPT = (
    "You have reached your {budget} budget. Do not call any tools. "
    "Give your best final answer now, using what you have found so far."
)
REJECTED_HINT = "A person refused this call. Do not repeat it; continue without it or explain what you need."
ALREADY_CALLED = (
    "{result}\n\n(Note: you already called this tool with these arguments at step {step}; this is that result. "
    "Calling it again will not change it: consider a different approach.)"
)


metrics = run_metrics
"""Seed 002's end-of-run metrics from a step log (`contracts.run.run_metrics`, which clients use too)."""

TOOL_REMINDER = "Remember your tools and their schemas: {tools}."
"""Seed 003: "every 10 turns, inject a one-line system reminder: 'Remember your tools and their schemas.'"."""


def tool_reminder(tools: list[ToolSpec]) -> str:
    """The one-line reminder: each tool with its parameters and their types, e.g. `echo(text: string)`."""

    def signature(tool: ToolSpec) -> str:
        properties = tool.parameters.get("properties") or {}
        params = ", ".join(
            f"{name}: {spec.get('type', 'any') if isinstance(spec, dict) else 'any'}"
            for name, spec in properties.items()
        )
        return f"{tool.name}({params})"

    return TOOL_REMINDER.format(tools="; ".join(signature(t) for t in tools))


def reminder_due(step: int, loop: LoopSettings) -> bool:
    """Whether the model call after `step` calls gets the tool reminder (every `tool_reminder_every` calls)."""
    every = loop.tool_reminder_every
    return bool(every) and step > 0 and step % every == 0


def gives_up(text: str, loop: LoopSettings) -> bool:
    """Seed 003's premature giving-up: the answer matches one of `give_up_patterns` (case-insensitive), searched
    in linear time: a crafted answer cannot hold the workflow task, and with it every run on the worker."""
    return any(patterns.search(pattern, text, ignore_case=True) for pattern in loop.give_up_patterns)


def call_key(workflow_id: str, chain_id: str, step: int, call_id: str) -> str:
    """The idempotency key of one tool call or delegation: `<workflow id>/<chain id>/<step>/<call id>`.

    The same on every retry and across continue-as-new (the chain id is the first run's id, carried
    forward); different for a later run that reuses the workflow id, so a tool that deduplicates by
    key never skips that run's work.
    """
    return f"{workflow_id}/{chain_id}/{step}/{call_id}"


CARRIED_RESULTS = 256
CARRIED_RESULT_CHARS = 256 * 1024


def latest_results(earlier: dict[str, tuple[int, str]]) -> dict[str, tuple[int, str]]:
    """The thrash guard's cache as continue-as-new carries it: its newest `CARRIED_RESULTS` calls, and no more
    than `CARRIED_RESULT_CHARS` of their results.

    Carrying all of it would store every read-only result again at every boundary, which grows with the square
    of the run's length. The guard is against loops, which repeat recent calls; an old call repeated after the
    boundary runs again, which a read-only tool allows.
    """
    kept: list[tuple[str, tuple[int, str]]] = []
    chars = 0
    for key, (step, text) in reversed(list(earlier.items())):
        chars += len(text)
        if len(kept) == CARRIED_RESULTS or chars > CARRIED_RESULT_CHARS:
            break
        kept.append((key, (step, text)))
    return dict(reversed(kept))


def step_text_chars(steps: list[StepRecord]) -> int:
    """The text a step log holds (messages, model texts, tool results and errors): what a result would repeat."""
    return sum(len(step.content) + len(step.result or "") + len(step.error or "") for step in steps)


def prune(messages: list[Message], limit: int | None) -> list[Message]:
    """Keep the goal and the last `limit` messages, never starting on an orphaned tool result.

    A tool message whose assistant message was cut would be rejected by every
    provider, so the window starts after it.
    """
    if limit is None or len(messages) <= limit + 1:
        return list(messages)
    tail = messages[-limit:]
    while tail and tail[0].role == "tool":
        tail = tail[1:]
    return [messages[0], *tail]


BUDGET_STOPS = ("max_steps", "max_tokens", "max_cost", "max_seconds")


def events(
    steps: list[StepRecord],
    *,
    max_steps: int | None = None,
    first_index: int = 0,
    status: str | None = None,
    answer: str | None = None,
) -> list[RunEvent]:
    """The step log in the KAOS memory-event vocabulary (`user_message`, `tool_call`, ...).

    With `max_steps`, each action is announced by a `progress` event first (its content the seed's progress
    block). Event ids are `evt-<record>-<type>`, `<record>` counting the log's records from `first_index` + 1
    (the records of earlier runs of a continue-as-new chain), so an event keeps its id as the run goes on.

    An answer is an `agent_response`, as the model's is: a turn that a budget stopped with an answer no step of it
    gave (`Reached maximum reasoning steps (N)`, seed 000's, or the last one `[output]` sent back) ends with it,
    under its last record's number. That record keeps it (`budget_answer`), each turn of a session its own; a
    result recorded before has only the run's `answer`, for its `status`.
    """
    out: list[RunEvent] = []
    index = first_index

    def add(step: StepRecord, event_type: str, content: object, **metadata: object) -> None:
        requested = event_type in ("tool_call", "delegation_request", "progress")
        out.append(
            RunEvent(
                event_id=f"evt-{index}-{event_type}",
                timestamp=step.started_at if requested else (step.ended_at or step.started_at),
                event_type=event_type,
                content=content,
                metadata={"step": step.step, **{k: v for k, v in metadata.items() if v is not None}},
            )
        )

    for step in steps:
        index += 1
        if max_steps is not None and step.role == "tool":
            add(step, "progress", progress_block(step, max_steps), tool_call_id=step.tool_call_id)
        if step.role == "user":
            add(step, "user_message", step.content)
        elif step.role == "tool" and step.tool_kind == "agent":
            task = (step.arguments or {}).get("task")
            add(step, "delegation_request", {"agent": step.tool_name, "task": task}, tool_call_id=step.tool_call_id)
            if step.error is not None:
                add(step, "delegation_error", step.error, agent=step.tool_name, tool_call_id=step.tool_call_id)
            elif step.result is not None:
                add(step, "delegation_response", step.result, agent=step.tool_name, tool_call_id=step.tool_call_id)
        elif step.role == "tool":
            add(
                step, "tool_call", {"tool": step.tool_name, "arguments": step.arguments}, tool_call_id=step.tool_call_id
            )
            if step.error is not None:
                add(step, "tool_error", step.error, tool=step.tool_name, tool_call_id=step.tool_call_id)
            elif step.result is not None:
                add(step, "tool_result", step.result, tool=step.tool_name, tool_call_id=step.tool_call_id)
        elif step.role == "assistant":
            if step.error is not None:
                add(step, "error", step.error)
            elif step.ended_at is not None and step.final:
                add(step, "agent_response", step.content)
        if step.budget_answer:
            add(step, "agent_response", step.budget_answer)
    if _unanswered_at_a_budget(steps, status, answer):  # a result recorded before `budget_answer`
        add(steps[-1], "agent_response", answer)
    return out


def keep_budget_answer(steps: list[StepRecord], stop: str, answer: str | None) -> None:
    """The turn just stopped (`stop`): when a budget stopped it with an `answer` no step of it gave, its last record
    keeps that answer (`StepRecord.budget_answer`), for the events of a session whose later turns have their own."""
    if answer and _unanswered_at_a_budget(steps, stop, answer):
        steps[-1].budget_answer = answer


def _unanswered_at_a_budget(steps: list[StepRecord], stop: str | None, answer: str | None) -> bool:
    """Whether the last turn of `steps` stopped at a budget with an `answer` none of its steps gave."""
    return bool(steps) and stop in BUDGET_STOPS and bool(answer) and not _answered(steps)


def _answered(steps: list[StepRecord]) -> bool:
    """Whether a step of the last turn (from its message on) is the answer, or keeps the budget's."""
    for step in reversed(steps):
        if step.final or step.budget_answer:
            return True
        if step.role == "user":
            return False
    return False
