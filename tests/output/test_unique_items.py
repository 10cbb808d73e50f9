"""`uniqueItems` (an output of `set[...]`): JSON equality, checked in one pass, so a long answer validates in the
workflow task without tripping the SDK's deadlock detector."""

from __future__ import annotations

import json
import math

import pytest
from temporalio.api.enums.v1 import EventType

from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.contracts.output_schema import validation_errors

UNIQUE = {"type": "array", "uniqueItems": True}


@pytest.mark.parametrize(
    ("items", "repeated"),
    [
        ([1, 1.0], "1.0"),
        ([0.0, -0.0], "-0.0"),
        ([True, True], "true"),
        ([None, 1, None], "null"),
        (["a", "b", "a"], '"a"'),
        ([1, 2, 2, 1], "2"),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], '{"b": 2, "a": 1}'),
        ([{"a": [1, {"x": 1}]}, {"a": [1.0, {"x": 1.0}]}], '{"a": [1.0, {"x": 1.0}]}'),
        ([[1, [2.0]], [1.0, [2]]], "[1.0, [2]]"),
        ([[], {}, []], "[]"),
    ],
)
def test_an_item_equal_in_json_to_an_earlier_one_is_named_as_repeated(items, repeated):
    assert validation_errors(items, UNIQUE) == [f"`$`: {repeated} is there more than once; items must be unique"]


@pytest.mark.parametrize(
    "items",
    [
        [True, 1],
        [False, 0, 0.5],
        ["1", 1],
        [None, False, 0, "", [], {}],
        [[1, 2], [2, 1]],
        [{"a": 1}, {"a": True}, {"a": 1, "b": 1}, {"b": 1}],
        [{"a": [1, 2]}, {"a": [2, 1]}],
        [[True], [1]],
        [2**53 + 1, float(2**53)],
        [math.nan, math.nan],
    ],
)
def test_items_json_finds_different_are_unique(items):
    assert validation_errors(items, UNIQUE) == []


def test_a_repeated_item_deep_in_the_answer_is_named_with_its_place():
    schema = {"type": "object", "properties": {"ids": UNIQUE}}
    assert validation_errors({"ids": [3, 1, 3]}, schema) == ["`$.ids`: 3 is there more than once; items must be unique"]


def test_an_item_that_is_no_json_value_is_compared_as_before():
    assert validation_errors([{1}, {2}, {1}], UNIQUE) == ["`$`: {1} is there more than once; items must be unique"]


def test_ten_thousand_distinct_items_take_one_pass():
    assert validation_errors(list(range(10_000)), UNIQUE) == []
    assert validation_errors([*range(10_000), 0], UNIQUE) == ["`$`: 0 is there more than once; items must be unique"]


async def test_a_run_answering_ten_thousand_distinct_integers_as_a_set_ends_done_with_no_failed_workflow_task(
    stalwart, worker_with, time_skipping_env
):
    answer = json.dumps(list(range(10_000)), separators=(",", ":"))  # one word: streams as one delta
    agent = AgentSpec(name="ids", output=set[int], scripted=[ScriptedReply(text=answer)])
    async with worker_with():
        handle = await stalwart.start(agent, "list the ids")
        result = await handle.result(output_type=set[int])
        history = await time_skipping_env.client.get_workflow_handle(handle.run_id).fetch_history()
    failed = [event for event in history.events if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert (result.stop_reason, result.output, failed) == ("done", set(range(10_000)), [])
