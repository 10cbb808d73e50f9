"""The workflows our loop is measured against: a bare activity loop, and a loop that carries the conversation.

`BareStepsWorkflow` is the floor: the same number of activity round trips as
an agent run, with nothing else. `CarriedConversationWorkflow` is how the
published agent-SDK integrations use Temporal: every model activity takes the
whole conversation as its input, so the history grows quadratically.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.messages import AssistantTurn, Message, ToolCall, ToolResult
    from stalwart.contracts.tools import ToolSpec
    from stalwart.workflows import policies

TIMEOUT = timedelta(seconds=60)
MODEL_NOOP = "bench_model_noop"
QUERYING_NOOP = "bench_querying_noop"
"""The activity types of the bare workflows' model calls (their tools' are `bench_noop`)."""


@activity.defn(name="bench_noop")
async def noop() -> None:
    """An activity that does nothing: what remains is Temporal's round trip."""


@activity.defn(name=MODEL_NOOP)
async def model_noop() -> None:
    """`noop` under a name of its own, standing in for a model call: the same round trip, told apart from the tool's
    in history (`bench/step_cost.py` times each tool call between the model calls around it)."""


@activity.defn(name=QUERYING_NOOP)
async def querying_noop() -> None:
    """Read from the workflow that scheduled it, as our model activity reads the conversation, and do nothing else."""
    info = activity.info()
    assert info.workflow_id is not None  # scheduled by a workflow, never started standalone
    await activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id).query("step")


@workflow.defn(name="BareSteps")
class BareStepsWorkflow:
    """An agent run's shape with nothing in it: one activity, then per turn a model and a tool activity, then a last
    model activity.

    With `query`, the model activities query the workflow like ours does, which isolates what that query costs.
    """

    def __init__(self) -> None:
        self._step = 0

    @workflow.query
    def step(self) -> int:
        return self._step

    @workflow.run
    async def run(self, turns: int, query: bool) -> int:
        model = querying_noop if query else model_noop
        await workflow.execute_activity(noop, start_to_close_timeout=TIMEOUT)
        for self._step in range(1, turns + 1):
            await workflow.execute_activity(model, start_to_close_timeout=TIMEOUT)
            await workflow.execute_activity(noop, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(model, start_to_close_timeout=TIMEOUT)
        return turns


@workflow.defn(name="BareStepsUnsandboxed", sandboxed=False)
class UnsandboxedBareStepsWorkflow(BareStepsWorkflow):
    """`BareStepsWorkflow` outside the SDK's sandbox, as `AgentWorkflow` runs: ours over this is the cost of our
    own code alone, with what leaving the sandbox saves taken out of the comparison."""

    @workflow.run
    async def run(self, turns: int, query: bool) -> int:
        return await super().run(turns, query)


class StepInput(BaseModel):
    """The smallest typed input a real activity has: which step, what it stands for, and how long it takes."""

    step: int
    kind: str
    latency: float = 0.0


class StepOutput(BaseModel):
    step: int
    kind: str


@activity.defn(name="bench_typed_step")
async def typed_step(request: StepInput) -> StepOutput:
    """A no-op (after `latency` seconds) with one pydantic input and output, as every activity of ours has."""
    if request.latency:
        await asyncio.sleep(request.latency)
    return StepOutput(step=request.step, kind=request.kind)


@workflow.defn(name="TypedSteps")
class TypedStepsWorkflow:
    """`BareStepsWorkflow` with what any well-kept activity carries: one pydantic input and output, and a summary
    for the Web UI's timeline; with `latency`, its model steps take that long, as in `BareLatencyStepsWorkflow`.

    The SDK converts, visits and (in the sandbox) contextualizes every payload of a workflow task, so these cost
    per step whatever the activity does; ours over this baseline is what our own code adds.
    """

    @workflow.run
    async def run(self, turns: int, latency: float = 0.0) -> int:
        async def step(number: int, kind: str, latency: float = 0.0) -> None:
            await workflow.execute_activity(
                typed_step,
                StepInput(step=number, kind=kind, latency=latency),
                start_to_close_timeout=TIMEOUT,
                summary=f"{kind} {number}",
            )

        await step(0, "tools")
        for number in range(1, turns + 1):
            await step(number, "model", latency)
            await step(number, "tool")
        await step(turns + 1, "model", latency)
        return turns


@workflow.defn(name="BareLocalToolSteps")
class BareLocalToolStepsWorkflow:
    """`BareStepsWorkflow` with its tool no-ops as local activities: the floor of a step whose tool is fast, what
    the SDK gives any workflow that runs a quick function inside its task."""

    @workflow.run
    async def run(self, turns: int) -> int:
        await workflow.execute_activity(noop, start_to_close_timeout=TIMEOUT)
        for _ in range(turns):
            await workflow.execute_activity(model_noop, start_to_close_timeout=TIMEOUT)
            await workflow.execute_local_activity(noop, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(model_noop, start_to_close_timeout=TIMEOUT)
        return turns


@workflow.defn(name="BareSession")
class BareSessionWorkflow:
    """A session's shape with nothing in it: each message, taken by update, is `calls` pairs of a model and a
    tool no-op, then a last model no-op (a turn of `calls` tool calls), and the update returns when they are
    done; `close` ends it."""

    @workflow.init
    def __init__(self, calls: int = 1) -> None:
        self._closed = False
        self._calls = calls

    @workflow.update
    async def send(self, message: str) -> str:
        for _ in range(2 * self._calls + 1):
            await workflow.execute_activity(noop, start_to_close_timeout=TIMEOUT)
        return message

    @workflow.update
    def close(self) -> str:
        self._closed = True
        return "closed"

    @workflow.run
    async def run(self, calls: int = 1) -> None:
        await workflow.wait_condition(lambda: self._closed and workflow.all_handlers_finished())


@workflow.defn(name="BenchIdle")
class IdleWorkflow:
    """The floor of an idle session (`bench.session_growth`): takes one message by update, keeps it, and waits on
    a condition."""

    def __init__(self) -> None:
        self._last = ""
        self._done = False

    @workflow.update
    def send(self, text: str) -> str:
        self._last = text
        return "ok"

    @workflow.signal
    def stop(self) -> None:
        self._done = True

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._done)


@activity.defn(name="bench_slow_model")
async def slow_model(latency: float) -> None:
    """A model call that takes `latency` seconds and answers nothing: what a provider's latency costs a worker."""
    await asyncio.sleep(latency)


@workflow.defn(name="BareLatencySteps")
class BareLatencyStepsWorkflow:
    """An agent run's shape with a slow model: a first no-op, per turn a slow model and a no-op tool, a last model."""

    @workflow.run
    async def run(self, turns: int, latency: float) -> int:
        await workflow.execute_activity(noop, start_to_close_timeout=TIMEOUT)
        for _ in range(turns):
            await workflow.execute_activity(slow_model, latency, start_to_close_timeout=TIMEOUT)
            await workflow.execute_activity(noop, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(slow_model, latency, start_to_close_timeout=TIMEOUT)
        return turns


PRICED_FEATURES = ("search attributes", "activity timeouts", "history bytes")
"""What every run of ours carries and `BareLatencyStepsWorkflow` lacks, priced on the server by
`bench/server_cost.py` (with `BareLatencyStepsWithWorkflow`)."""

_TOOL_TIMEOUT = timedelta(seconds=ToolSpec.model_fields["timeout_seconds"].default)
_TOOL_HEARTBEAT = timedelta(seconds=ToolSpec.model_fields["heartbeat_timeout_seconds"].default)


@activity.defn(name="bench_padded_step")
async def padded_step(latency: float, padding: str) -> str:
    """A no-op after `latency` seconds that takes `padding` and returns it: history bytes and nothing else."""
    if latency:
        await asyncio.sleep(latency)
    return padding


@workflow.defn(name="BareLatencyStepsWith")
class BareLatencyStepsWithWorkflow:
    """`BareLatencyStepsWorkflow` with some of `PRICED_FEATURES` as the agent loop has them:

    - `search attributes`: the run starts with Stalwart's (the starter sets them, as `StalwartClient` does), a
      patch marker after the first model step (the SDK's core upserts `TemporalChangeVersion` for it, as for the
      loop's patches), and the final status and counters upserted before the end;
    - `activity timeouts`: the model and tool activities' timeouts and heartbeat timeouts as the loop sets them
      (`workflows/policies.py`, a tool's defaults);
    - `history bytes`: `padding` in every activity's input and again in its result, where most of the bytes a run
      of ours has beyond a bare one are.
    """

    @workflow.run
    async def run(self, turns: int, latency: float, features: list[str], padding: str = "") -> str:
        model: dict[str, Any] = {"start_to_close_timeout": TIMEOUT}
        tool: dict[str, Any] = {"start_to_close_timeout": TIMEOUT}
        if "activity timeouts" in features:
            model = {
                "start_to_close_timeout": policies.MODEL_START_TO_CLOSE,
                "schedule_to_close_timeout": policies.MODEL_SCHEDULE_TO_CLOSE,
                "heartbeat_timeout": policies.MODEL_HEARTBEAT,
            }
            tool = {"start_to_close_timeout": _TOOL_TIMEOUT, "heartbeat_timeout": _TOOL_HEARTBEAT}
        padding = padding if "history bytes" in features else ""
        await workflow.execute_activity(padded_step, args=[0.0, padding], start_to_close_timeout=TIMEOUT)
        for turn in range(turns):
            await workflow.execute_activity(padded_step, args=[latency, padding], **model)
            if turn == 0 and "search attributes" in features:
                workflow.patched("bench-priced-marker")
            await workflow.execute_activity(padded_step, args=[0.0, padding], **tool)
        await workflow.execute_activity(padded_step, args=[latency, padding], **model)
        if "search attributes" in features:
            workflow.upsert_search_attributes(
                [
                    names.AGENT_STATUS.value_set("done"),
                    names.AGENT_STEPS.value_set(turns + 1),
                    names.AGENT_TOKENS.value_set(100 * (turns + 1)),
                    names.AGENT_COST_USD.value_set(0.001 * (turns + 1)),
                ]
            )
        return "done"


class CarriedModelRequest(BaseModel):
    """A model call that carries the whole conversation, as the published integrations do."""

    turns: int
    result_bytes: int
    messages: list[Message]


class BlobRequest(BaseModel):
    call: ToolCall


def blob_text(size: int, page: int = 0) -> str:
    """`size` characters of filler, standing in for a typical tool result; each page's differs, as real results do
    (identical results would be stored once, by their hash, and flatter the storage figures)."""
    filler = f"Page {page}: the quick brown fox jumps over the lazy dog. "
    return (filler * (size // len(filler) + 1))[:size]


@activity.defn(name="bench_carried_model")
async def carried_model(request: CarriedModelRequest) -> AssistantTurn:
    """A scripted model: a `blob` call per turn until `turns` tool calls were made, then the answer."""
    made = sum(1 for m in request.messages if m.role == "assistant")
    if made >= request.turns:
        return AssistantTurn(text=f"done after {made} tool calls")
    return AssistantTurn(
        tool_calls=[
            ToolCall(id=f"call_{made + 1}", name="blob", arguments={"size": request.result_bytes, "page": made + 1})
        ]
    )


@activity.defn(name="bench_blob")
async def blob_activity(request: BlobRequest) -> ToolResult:
    return ToolResult(
        call_id=request.call.id,
        name="blob",
        content=blob_text(request.call.arguments["size"], request.call.arguments.get("page", 0)),
    )


@workflow.defn(name="CarriedConversation")
class CarriedConversationWorkflow:
    @workflow.run
    async def run(self, request: CarriedModelRequest) -> str:
        messages = list(request.messages)
        while True:
            turn = await workflow.execute_activity(
                carried_model,
                CarriedModelRequest(turns=request.turns, result_bytes=request.result_bytes, messages=messages),
                start_to_close_timeout=TIMEOUT,
            )
            messages.append(Message(role="assistant", content=turn.text, tool_calls=turn.tool_calls))
            if not turn.tool_calls:
                return turn.text
            result = await workflow.execute_activity(
                blob_activity, BlobRequest(call=turn.tool_calls[0]), start_to_close_timeout=TIMEOUT
            )
            messages.append(Message(role="tool", tool_results=[result]))


WORKFLOWS = [
    BareStepsWorkflow,
    UnsandboxedBareStepsWorkflow,
    TypedStepsWorkflow,
    BareLocalToolStepsWorkflow,
    BareSessionWorkflow,
    BareLatencyStepsWorkflow,
    BareLatencyStepsWithWorkflow,
    CarriedConversationWorkflow,
]
ACTIVITIES: list[Callable[..., Any]] = [
    noop,
    model_noop,
    querying_noop,
    typed_step,
    slow_model,
    padded_step,
    carried_model,
    blob_activity,
]
