"""How runs and sessions look in a terminal: one line per step, then the answer and the facts of the run.

Only the standard library is imported: the CLI loads this module for every command.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from collections.abc import Sequence

    from stalwart.client.api import RunSummary
    from stalwart.contracts.approvals import PendingApproval
    from stalwart.contracts.messages import Usage
    from stalwart.contracts.run import AgentResult, RunEvent, RunMetrics, RunState, StepRecord

_WIDTH = 160
_SESSION_STATUSES = ("waiting", "closed", "idle")
_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code not in (0x09, 0x0A)} | {
    code: f"\\u{code:04x}" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
}
"""Control characters shown escaped (`\\x1b`): model and tool output must not move the cursor, clear the screen,
retitle the window or hide text. Newline and tab pass. So are the marks that reorder text (`\\u202e`, right-to-left
override, the embeddings and the isolates): they can show a line as other than what it says. The marks that
only set a direction (U+200E, U+200F) pass: right-to-left text uses them."""


def escaped(text: str) -> str:
    """`text` with its control characters (but newline and tab) written as `\\xNN`."""
    return text.translate(_CONTROL)


class TerminalSafe:
    """A text stream that escapes control characters in everything written to it; the rest passes through."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        return self.inner.write(escaped(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def terminal_safe(out: TextIO) -> TextIO:
    """`out`, escaping control characters (once, however often it is wrapped)."""
    return out if isinstance(out, TerminalSafe) else TerminalSafe(out)  # type: ignore[return-value]


def _clip(text: str, width: int = _WIDTH) -> str:
    flat = escaped(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


CUT_OFF = ("length", "max_tokens", "incomplete: max_output_tokens", "model_context_window_exceeded")
"""Provider stop reasons of a reply cut off by the output-token limit (Chat Completions, Anthropic, Responses)."""


def step_line(step: StepRecord, *, session: bool = False) -> str:
    """`[2] tool  calculator(expression='1+1') → 2`; a user's text is a run's goal, or a message to a session."""
    took = f" ({(step.ended_at - step.started_at).total_seconds():.2f}s)" if step.ended_at else " (running)"
    if step.role == "user":
        return f"[{step.step}] {'message' if session else 'goal   '} {_clip(step.content)}"
    if step.role == "assistant":
        tokens = f", {step.usage.total_tokens} tokens" if step.usage.total_tokens else ""
        if step.usage.estimated:
            tokens = tokens.replace(" tokens", " tokens estimated")
        if step.usage.cached_tokens:
            tokens += f" ({step.usage.cached_tokens} cached)"
        if step.usage.cost_usd:
            tokens += f", ${step.usage.cost_usd:.4f}"
        if step.error:
            return f"[{step.step}] model   ERROR {_clip(step.error)}{took}"
        text = _clip(step.content) if step.content else "(calls tools)"
        if step.stop_reason in CUT_OFF:
            tokens += f", CUT OFF: {step.stop_reason}"
        return f"[{step.step}] model   {text}{took[:-1]}{tokens})" if step.ended_at else f"[{step.step}] model   …"
    arguments = ", ".join(f"{k}={json.dumps(v)}" for k, v in (step.arguments or {}).items())
    outcome = f"ERROR {step.error}" if step.error is not None else (step.result or "")
    return f"[{step.step}] tool    {step.tool_name}({_clip(arguments, 60)}) → {_clip(outcome, 100)}{took}"


class LiveLine:
    """Step lines and streamed answer text sharing one terminal without garbling each other.

    Streamed words go on an open line under `»`; a step line first closes it.
    A model step whose text was streamed is not repeated in full.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = terminal_safe(out)
        self.open_step: int | None = None
        self.streamed: set[int] = set()
        self.printed: set[int] = set()

    def delta(self, step: int, text: str) -> None:
        if step in self.printed:  # the finished step was printed in full before its stream was read
            return
        if self.open_step != step:
            self.close()
            self.out.write(f"[{step}] model » ")
            self.open_step = step
        self.streamed.add(step)
        self.out.write(text)
        self.out.flush()

    def retract(self, step: int) -> None:
        self.streamed.discard(step)
        if self.open_step == step:
            self.out.write("  (withdrawn: a retried model call wrote something else)")
        self.close()

    def progress(self, block: dict[str, object]) -> None:
        """Seed 000's progress block, before the action it announces: `[1] progress {"type": "progress", ...}`."""
        self.close()
        print(f"[{block['step']}] progress {json.dumps(block)}", file=self.out, flush=True)

    def step(self, record: StepRecord) -> None:
        self.close()
        if record.role == "assistant":
            self.printed.add(record.step)
        if record.role == "assistant" and record.step in self.streamed and not record.error:
            took = (record.ended_at - record.started_at).total_seconds() if record.ended_at else 0.0
            print(
                f"[{record.step}] model   (streamed above) ({took:.2f}s, {record.usage.total_tokens} tokens)",
                file=self.out,
                flush=True,
            )
        else:
            print(step_line(record), file=self.out, flush=True)

    def close(self) -> None:
        if self.open_step is not None:
            self.out.write("\n")
            self.out.flush()
            self.open_step = None


ESTIMATED_NOTE = (
    "note: the provider reported no (or negative) token usage for some model calls; those counts are estimates "
    "(about 4 characters a token), and the token and cost budgets were enforced on them."
)


def print_result(result: AgentResult, ui_url: str | None, out: TextIO) -> None:
    out = terminal_safe(out)
    print(f"\nanswer: {result.answer}", file=out)
    usage = result.usage
    cost = f" · ${usage.cost_usd:.4f}" if usage.cost_usd else ""
    model_steps = sum(1 for s in result.steps if s.role == "assistant")
    print(
        f"stop reason: {result.stop_reason} · {model_steps} model steps · "
        f"{token_totals(usage, result.metrics, result.steps)}{cost} · {result.elapsed_seconds:.2f}s",
        file=out,
    )
    if result.error:
        print(f"error: {result.error}", file=out)
    if result.metrics is not None:
        print_metrics(result.metrics, out, usage=usage, steps=result.steps)
    if result.budget_fired_after_seconds is not None and result.elapsed_seconds > result.budget_fired_after_seconds + 1:
        print(budget_fired_note(result), file=out)
    if usage.estimated:
        print(ESTIMATED_NOTE, file=out)
    if ui_url:
        print(f"Temporal UI: {ui_url}", file=out)


def budget_fired_note(result: AgentResult) -> str:
    """Why a run stopped by its wall-clock budget took longer than the budget: nobody was there to record it."""
    return (
        f"note: the wall-clock budget fired {result.budget_fired_after_seconds:.2f}s after the start, when the run "
        f"stopped working; the result was recorded at {result.elapsed_seconds:.2f}s, when a worker was back to do it"
    )


def token_totals(usage: Usage, metrics: RunMetrics | None, steps: Sequence[StepRecord]) -> str:
    """`60 in / 60 out tokens`: a run's totals, which count what its sub-agents spent; when it delegated, saying so
    and how much that was (its own steps, and its metrics' cycles, do not show it)."""
    return f"{usage.input_tokens} in / {usage.output_tokens} out tokens{_sub_agents(usage, metrics, steps, True)}"


def _sub_agents(usage: Usage, metrics: RunMetrics | None, steps: Sequence[StepRecord], amount: bool) -> str:
    """`, sub-agents' 10 in / 10 out included` (or without the amount) when `usage` counts sub-agents' tokens.

    A run's usage adds up its own model calls and its delegations; its metrics count only its own model calls (its
    steps), so the difference is what its sub-agents spent."""
    extra_in = max(usage.input_tokens - metrics.input_tokens, 0) if metrics is not None else 0
    extra_out = max(usage.output_tokens - metrics.output_tokens, 0) if metrics is not None else 0
    if not (extra_in or extra_out or any(step.tool_kind == "agent" for step in steps)):
        return ""
    if not amount or metrics is None:
        return ", sub-agents included"
    return f", sub-agents' {extra_in} in / {extra_out} out included"


def print_metrics(
    metrics: RunMetrics, out: TextIO, *, usage: Usage | None = None, steps: Sequence[StepRecord] = ()
) -> None:
    """Seed 002's end-of-run metrics: cycles, tokens, latency per tool, totals.

    With `usage` (the run's), the tokens are its totals, sub-agents included as everywhere else a run's tokens are
    shown; without, those of its own model calls."""
    if usage is None:
        tokens = f"{metrics.total_tokens} tokens ({metrics.input_tokens} in / {metrics.output_tokens} out)"
    else:
        sub_agents = _sub_agents(usage, metrics, steps, False)
        tokens = f"{usage.total_tokens} tokens ({usage.input_tokens} in / {usage.output_tokens} out{sub_agents})"
    print(
        f"metrics: {metrics.cycles} cycle{'' if metrics.cycles == 1 else 's'} · {tokens} · "
        f"model {metrics.model_seconds:.2f}s · "
        f"{metrics.tool_calls} tool call{'' if metrics.tool_calls == 1 else 's'} {metrics.tool_seconds:.2f}s · "
        f"{metrics.elapsed_seconds:.2f}s in all",
        file=out,
    )
    for name, tool in sorted(metrics.tools.items()):
        print(
            f"  tool {name}: {tool.calls} call{'' if tool.calls == 1 else 's'} ({tool.successes} ok, {tool.errors} "
            f"failed) · {tool.total_seconds:.2f}s in all · {tool.average_seconds:.2f}s each on average",
            file=out,
        )


def is_session(state: RunState) -> bool:
    """A session's state: said by the run, or (for one that has ended) by its status or its several messages."""
    messages = sum(1 for step in state.steps if step.role == "user")
    return state.session or state.status in _SESSION_STATUSES or messages > 1


def print_state(run_id: str, state: RunState, ui_url: str | None, out: TextIO, *, retrying: Sequence[str] = ()) -> None:
    """`retrying`: why calls the run waits on failed their last attempt (`RunReader.retrying`)."""
    out = terminal_safe(out)
    session = is_session(state)
    turns = f" · {state.turns} turn{'' if state.turns == 1 else 's'}" if session and state.turns else ""
    print(f"{'session' if session else 'run'} {run_id} · agent {state.agent} · status {state.status}{turns}", file=out)
    for step in state.steps:
        print("  " + step_line(step, session=session), file=out)
    if state.answer:
        print(f"\n{'last answer' if session else 'answer'}: {state.answer}", file=out)
    if state.error:
        print(f"error: {state.error}", file=out)
    print(f"usage: {token_totals(state.usage, state.metrics, state.steps)}", file=out)
    if state.metrics is not None:
        print_metrics(state.metrics, out, usage=state.usage, steps=state.steps)
    if state.usage.estimated:
        print(ESTIMATED_NOTE, file=out)
    if state.status == "waiting":
        print(f"waiting for a message: `stalwart send {run_id} MESSAGE` or `stalwart chat {run_id}`", file=out)
    for note in retrying:
        print(f"retrying: {_clip(note, 600)}", file=out)
    if state.waiting:
        print(f"waiting: {_clip(state.waiting, 600)}", file=out)
    for ignored in state.notes:  # what was sent to the run that it could not use
        print(f"ignored: {_clip(ignored.text, 600)}", file=out)
    if state.offline:
        print(f"note: {state.offline}", file=out)
    if ui_url:
        print(f"Temporal UI: {ui_url}", file=out)


def print_events(events: list[RunEvent], out: TextIO) -> None:
    out = terminal_safe(out)
    for event in events:
        content = event.content if isinstance(event.content, str) else json.dumps(event.content)
        print(f"{event.timestamp.isoformat()}  {event.event_type:<20} {_clip(content, 120)}", file=out)


def print_pending(
    runs: list[tuple[str, list[PendingApproval]]], out: TextIO, *, notes: dict[str, str] | None = None
) -> None:
    """The waiting calls of each run; `notes` says, per run, why it was read from history or could not be read."""
    out = terminal_safe(out)
    for run_id, note in (notes or {}).items():
        print(f"{run_id}  note: {note}", file=out)
    waiting = [(run_id, p) for run_id, pending in runs for p in pending]
    if not waiting:
        print("no tool calls are waiting for approval", file=out)
        return
    for run_id, p in waiting:
        print(
            f"{run_id}  call {p.call_id}  {p.tool_name}({_clip(json.dumps(p.arguments), 80)})  "
            f"step {p.step} · rejected unless decided by {p.expires_at:%Y-%m-%d %H:%M:%S} UTC",
            file=out,
        )


def print_runs(runs: list[RunSummary], out: TextIO) -> None:
    out = terminal_safe(out)
    if not runs:
        print("no runs found", file=out)
        return
    header = f"{'RUN':<36} {'AGENT':<16} {'STATUS':<18} {'STEPS':>5} {'TOKENS':>7} {'COST $':>8}  STARTED"
    print(header, file=out)
    for run in runs:
        started = run.started_at.strftime("%Y-%m-%d %H:%M:%S") if run.started_at else ""
        cost = f"{run.cost_usd:.4f}" if run.cost_usd else ""
        print(
            f"{run.run_id:<36} {run.agent or '':<16} {run.status or run.temporal_status or '':<18} "
            f"{run.steps if run.steps is not None else '':>5} {run.tokens if run.tokens is not None else '':>7} "
            f"{cost:>8}  {started}",
            file=out,
        )


class ChatView:
    """One turn of `stalwart chat`: its tool calls (on `err`) as they finish, then its answer (on `out`).

    Live, the answer's words are written as the model generates them after `prefix`; otherwise
    (output to a pipe or a file) it is written whole when the turn ends, so text the model went on
    to replace with tool calls never reaches the output.
    """

    def __init__(self, out: TextIO, err: TextIO, *, prefix: str = "", live: bool = False) -> None:
        self.out = terminal_safe(out)
        self.err = terminal_safe(err)
        self.prefix = prefix
        self.live = live
        self.shown: dict[int, str] = {}  # streamed text, by model step
        self.open_step: int | None = None
        self.printed: set[tuple[int, str, str | None]] = set()

    def delta(self, step: int, text: str) -> None:
        if not self.live:
            return
        if self.open_step != step:
            self.close()
            self.out.write(self.prefix)
            self.open_step = step
        self.shown[step] = self.shown.get(step, "") + text
        self.out.write(text)
        self.out.flush()

    def retract(self, step: int) -> None:
        if self.shown.pop(step, None) and self.open_step == step:
            self.out.write("  (withdrawn: a retried model call wrote something else)")
        self.close()

    def step(self, record: StepRecord) -> None:
        """A finished tool call, once."""
        key = (record.step, record.role, record.tool_call_id)
        if record.role != "tool" or record.ended_at is None or key in self.printed:
            return
        self.printed.add(key)
        self.close()
        print("  " + step_line(record), file=self.err, flush=True)

    def finish(self, result: AgentResult) -> None:
        """The turn has ended: the tool calls not shown yet, the answer (or the rest of it), and how it ended."""
        for record in result.steps:
            self.step(record)
        final = next((s for s in reversed(result.steps) if s.role == "assistant" and s.final), None)
        shown = self.shown.get(final.step, "") if final is not None else ""
        if final is not None and self.open_step == final.step and result.answer.startswith(shown):
            self.out.write(result.answer[len(shown) :] + "\n")
            self.open_step = None
        else:
            self.close()
            if result.answer:
                self.out.write(f"{self.prefix}{result.answer}\n")
        self.out.flush()
        if result.stop_reason != "done":
            ended = f"the turn ended with stop reason {result.stop_reason}"
            print(f"error: {ended}: {result.error}" if result.error else f"({ended})", file=self.err, flush=True)

    def close(self) -> None:
        """End a line of streamed text."""
        if self.open_step is not None:
            self.out.write("\n")
            self.out.flush()
            self.open_step = None


def print_closed(session_id: str, result: AgentResult, out: TextIO) -> None:
    """What `stalwart close` says on stderr after the stop reason: what the session did over its life."""
    out = terminal_safe(out)
    messages = sum(1 for s in result.steps if s.role == "user")
    cost = f" · ${result.usage.cost_usd:.4f}" if result.usage.cost_usd else ""
    print(
        f"session {session_id} ended ({result.stop_reason}) after {messages} message{'' if messages == 1 else 's'} · "
        f"{token_totals(result.usage, result.metrics, result.steps)}{cost} · "
        f"{result.elapsed_seconds:.1f}s; `stalwart show {session_id}` prints its steps",
        file=out,
    )
