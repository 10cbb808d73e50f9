"""Issue 43, item 6: a tool returning a value JSON cannot encode is the tool's fault, not its arguments'.

It was attempted five times (the encoding failed after the tool ran, as an activity failure Temporal retried), and
the model was then told "Check argument names and types". Now the tool runs once, and the model and the worker's
log are told what the tool returned and what its author should return instead.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from stalwart.activities.tool_activities import UNENCODABLE_HINT
from stalwart.activities.tools import tool
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import TOOL_ERROR_HINT

calls: list[str] = []


class Cell:
    """An object whose text form cannot be made: `json.dumps(..., default=str)` fails on it too."""

    def __str__(self) -> str:
        raise RuntimeError("no text form")


class Grid(BaseModel):
    cell: object


@tool
def pairs(kind: str) -> object:
    """Return a value JSON cannot encode.

    Args:
        kind: Which: `keys` (tuple keys), `cycle` (a list holding itself) or `model` (a model of an odd object).
    """
    calls.append(kind)
    if kind == "keys":
        return {(1, 2): "pair"}
    if kind == "cycle":
        loop: list[object] = []
        loop.append(loop)
        return loop
    return Grid(cell=Cell())


def _agent(kind: str) -> AgentSpec:
    return AgentSpec(
        name="tester",
        tools=["pairs"],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="pairs", arguments={"kind": kind})]),
            ScriptedReply(text="The tool is broken."),
        ],
    )


async def test_a_tool_returning_what_json_cannot_encode_runs_once_and_is_named_at_fault(stalwart, worker_with):
    for kind, type_name in (("keys", "dict"), ("cycle", "list"), ("model", f"{Grid.__module__}.Grid")):
        calls.clear()
        async with worker_with(pairs):
            result = await stalwart.run(_agent(kind), "go")
        assert result.stop_reason == "done"
        assert calls == [kind], "the tool ran once: its result, not the call, is at fault"
        [step] = [s for s in result.steps if s.role == "tool"]
        told = json.loads(step.error or "{}")
        print(f"\n{kind}: {told['error']}")
        assert f"tool pairs returned a value of type {type_name} that is not JSON-serialisable" in told["error"]
        assert "return a str, a dict or list of JSON values, or a pydantic model" in told["error"]
        assert told["hint"] == UNENCODABLE_HINT != TOOL_ERROR_HINT
