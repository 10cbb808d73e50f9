"""Issue 10, defect 1: every number of an agent file has a finite range Temporal can hold.

A value `stalwart check` accepted but Temporal could not hold (`max_seconds = 1e308`, an approval
timeout of 1e12 s, `max_tokens = 2**63`) sent the workflow task into endless failure: the run never
moved and never ended; `max_seconds = inf` was silently "no budget". The property checked here, for
every numeric field of every section: a value at or just past either edge of its range (and inf, nan,
2**63, 1e308) is either refused when the agent file is loaded, naming the field and the range, or
runs to an end on the time-skipping server.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from stalwart.client.agent_files import AgentFileError, parse_agent
from stalwart.contracts.agent import (
    MAX_STREAM_DEADLINE_SECONDS,
    MIN_SECONDS,
    MIN_STREAM_DEADLINE_SECONDS,
    STREAM_DEADLINES,
    AgentSpec,
    Budgets,
    ContextSettings,
    ScriptedReply,
    SessionSettings,
)
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers.worker import build_worker

pytestmark = pytest.mark.slow

BIG = [math.inf, -math.inf, math.nan, 2**63, -(2**63) - 1, 1e308, -1e308]


@dataclass(frozen=True)
class NumberField:
    path: tuple[str | int, ...]
    """Where it sits in an agent file, e.g. ("budgets", "max_seconds") or ("scripted", 0, "input_tokens")."""
    whole: bool
    low: float | None
    low_included: bool
    high: float | None
    high_included: bool

    @property
    def name(self) -> str:
        return ".".join(str(part) for part in self.path)

    def edges(self) -> Iterator[float]:
        """Values at the edges of the range, just inside and just outside."""
        yield from BIG
        step = 1 if self.whole else None
        for bound, direction in ((self.low, -1), (self.high, 1)):
            if bound is None:
                continue
            if step:
                yield from (bound - direction, bound, bound + direction)
            else:
                yield from (
                    bound,
                    math.nextafter(bound, direction * math.inf),
                    math.nextafter(bound, -direction * math.inf),
                )
                yield bound * (1 + direction * 1e-9) if bound else direction * 1e-9
        yield from (0, -1, 1)

    def accepts(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.whole and value != int(value):
            return False
        if self.low is not None and (value < self.low or (value == self.low and not self.low_included)):
            return False
        return self.high is None or value < self.high or (value == self.high and self.high_included)


def _numbers(model: type[BaseModel], prefix: tuple[str | int, ...]) -> Iterator[NumberField]:
    for name, info in model.model_fields.items():
        types = set(get_args(info.annotation)) or {info.annotation}
        if not types & {int, float} or bool in types:
            continue
        bounds: dict[str, Any] = {}
        for meta in info.metadata:
            bounds.update({k: getattr(meta, k) for k in ("gt", "ge", "lt", "le") if getattr(meta, k, None) is not None})
        yield NumberField(
            (*prefix, name),
            whole=float not in types,
            low=bounds.get("ge", bounds.get("gt")),
            low_included="ge" in bounds,
            high=bounds.get("le", bounds.get("lt")),
            high_included="le" in bounds,
        )


NUMBER_FIELDS = [
    *_numbers(AgentSpec, ()),
    *_numbers(Budgets, ("budgets",)),
    *_numbers(SessionSettings, ("session",)),
    *_numbers(ContextSettings, ("context",)),
    *_numbers(ScriptedReply, ("scripted", 0)),
    *(
        NumberField(("extra", key), False, MIN_STREAM_DEADLINE_SECONDS, True, MAX_STREAM_DEADLINE_SECONDS, True)
        for key in STREAM_DEADLINES
    ),
]


def test_every_number_of_an_agent_file_has_a_finite_upper_bound():
    names = {field.name for field in NUMBER_FIELDS}
    assert {
        "budgets.max_seconds",
        "approval_timeout_seconds",
        "budgets.max_tokens",
        "session.idle_timeout_seconds",
    } <= (names)
    unbounded = [field.name for field in NUMBER_FIELDS if field.high is None or field.low is None]
    assert not unbounded, f"fields without a range: {unbounded}"


@pytest.mark.parametrize("value", [True, False])
def test_no_number_of_an_agent_file_takes_a_boolean(value: bool):
    """Issue 43: `[session] max_message_chars = true` was accepted as 1 (a bool is an int to Python and pydantic)."""
    for field in NUMBER_FIELDS:
        with pytest.raises(AgentFileError) as refused:
            parse_agent(_with(_base(), field.path, value), source="bools.toml")
        message = str(refused.value)
        said = f"not {value!r}" if field.path[0] == "extra" else f"not the boolean `{str(value).lower()}`"
        assert f"`{field.name}`" in message and said in message, message


def test_every_number_anywhere_in_an_agent_spec_refuses_a_boolean():
    """Not only the sections listed above: every numeric field of every model an agent file reaches, so a field
    added later is covered without a change here."""
    taken = []
    for model in _models(AgentSpec, set()):
        for field in _numbers(model, ()):
            [name] = field.path
            try:
                model.model_validate({name: True})
            except ValidationError as err:
                if any(error["loc"] == (name,) for error in err.errors()):
                    continue
            taken.append(f"{model.__name__}.{name}")
    assert not taken, f"numeric fields that take a boolean: {taken}"


def test_every_duration_of_an_agent_file_is_at_least_a_second():
    """Issue 43: `idle_timeout_seconds = 1e-9` ended a session before its first message; a duration is a second or
    more (a stream deadline a tenth of a second or more), and a shorter one is refused naming the field."""
    durations = [field for field in NUMBER_FIELDS if str(field.path[-1]).endswith("_seconds")]
    assert {"session.idle_timeout_seconds", "budgets.max_seconds", "approval_timeout_seconds"} <= {
        field.name for field in durations
    }
    for field in durations:
        least = MIN_STREAM_DEADLINE_SECONDS if field.path[0] == "extra" else MIN_SECONDS
        assert (field.low, field.low_included) == (least, True), field.name
        with pytest.raises(AgentFileError) as refused:
            parse_agent(_with(_base(), field.path, 1e-9), source="short.toml")
        assert f"`{field.name}`" in str(refused.value) and f"at least {least:g}" in str(refused.value)


def _models(annotation: Any, seen: set[type[BaseModel]]) -> Iterator[type[BaseModel]]:
    """Every model an agent file can reach from `annotation`: through fields, lists, dicts, unions."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        yield annotation
        for info in annotation.model_fields.values():
            yield from _models(info.annotation, seen)
    for arg in get_args(annotation):
        yield from _models(arg, seen)


def test_every_number_anywhere_in_an_agent_spec_has_a_finite_range():
    """Not only the sections listed above: any model an agent file reaches (MCP servers, sub-agents, scripted
    calls ...), so a numeric field added later without a range fails here."""
    unbounded = [
        f"{model.__name__}.{field.path[-1]}"
        for model in _models(AgentSpec, set())
        for field in _numbers(model, ())
        if field.low is None or field.high is None
    ]
    assert not unbounded, f"numeric fields without a finite range: {unbounded}"
    takes_inf = [
        model.__name__ for model in _models(AgentSpec, set()) if model.model_config.get("allow_inf_nan") is not False
    ]
    assert not takes_inf, f"models that accept inf and nan: {takes_inf}"


def _base() -> dict[str, Any]:
    """A session that calls a tool needing approval, then answers, then ends idle: every timer of a run is set."""
    return {
        "name": "edges",
        "model": "scripted",
        "tools": ["calculator"],
        "require_approval": ["calculator"],
        "approval_timeout_seconds": 30,
        "session": {"idle_timeout_seconds": 60},
        "scripted": [
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
            {"text": "done"},
        ],
    }


def _with(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    node: Any = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    return data


def _cases() -> Iterator[tuple[NumberField, float]]:
    for field in NUMBER_FIELDS:
        for value in field.edges():
            yield field, value
    chance = random.Random(10)
    for field in NUMBER_FIELDS:  # and values drawn anywhere in the range, log-uniformly
        low, high = max(field.low or 0, 1e-6), field.high or 1e6
        value = math.exp(chance.uniform(math.log(low), math.log(high)))
        yield field, (round(value) if field.whole else value)


async def test_number_ranges_edges_are_refused_at_load_or_run_to_an_end(time_skipping_env, task_queue):
    accepted: list[tuple[str, AgentSpec]] = []
    refused = 0
    for field, value in _cases():
        data = _with(_base(), field.path, value)
        try:
            spec = parse_agent(data, source="edges.toml")
        except AgentFileError as err:
            refused += 1
            assert f"`{field.name}`" in str(err), (field.name, value, str(err))
            assert not field.accepts(value), f"{field.name} = {value!r} is in its range but was refused: {err}"
            if isinstance(value, float) and not math.isfinite(value) or field.high is not None and value > field.high:
                assert "at most" in str(err) or "finite" in str(err), str(err)
            continue
        assert field.accepts(value), f"{field.name} = {value!r} is outside its range but was accepted"
        accepted.append((f"{field.name}={value!r}", spec))
    assert refused and accepted

    async def run_to_end(label: str, spec: AgentSpec) -> str:
        try:
            run_input = RunInput(agent=spec, goal="go", session=True)
        except ValueError:  # a goal longer than max_message_chars is refused before the run starts
            assert spec.session.max_message_chars < 2, label
            return "refused"
        handle = await time_skipping_env.client.start_workflow(
            WORKFLOW_TYPE,
            run_input,
            id=f"edges-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        result = await handle.result()
        assert result.stop_reason in ("idle", "max_steps", "max_tokens", "done", "max_seconds"), (label, result)
        return result.stop_reason

    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        # One at a time: the time-skipping server mishandles its clock with a hundred runs at once.
        ends = [await run_to_end(label, spec) for label, spec in accepted]
    print(f"\n{refused} edge values refused at load; {len(ends)} accepted ran to an end: {sorted(set(ends))}")
