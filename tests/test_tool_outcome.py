"""Issue 8, item 3: one typed tool outcome from the tool function to the model message.

A result is text, data or an error with a hint, never JSON hidden inside a string; every wire format
turns it into the model's text through `ToolResult.for_model()` alone.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from stalwart.activities.protocols.text_protocol import results_text
from stalwart.activities.providers import anthropic, openai_chat, openai_responses
from stalwart.contracts.messages import CUT_MARKER, Message, ToolCall, ToolResult

CALL = ToolCall(id="c1", name="lookup", arguments={"q": "x"})


class Found(BaseModel):
    title: str
    pages: int


def test_one_outcome_a_string_is_text():
    result = ToolResult.returned(CALL, "plain words")
    assert (result.content, result.data, result.error) == ("plain words", None, None)
    assert result.for_model() == "plain words"


def test_one_outcome_a_dict_or_model_is_data_that_the_model_reads_as_json():
    for value, data in (({"a": [1, 2]}, {"a": [1, 2]}), (Found(title="T", pages=3), {"title": "T", "pages": 3})):
        result = ToolResult.returned(CALL, value)
        assert result.data == data and result.content == "" and not result.is_error
        assert json.loads(result.for_model()) == data


def test_one_outcome_a_failure_carries_its_error_and_hint_as_fields():
    result = ToolResult.failure(CALL, "ValueError: no such page", "Ask for a page that exists.")
    assert result.is_error and result.content == ""
    assert (result.error, result.hint) == ("ValueError: no such page", "Ask for a page that exists.")
    assert json.loads(result.for_model()) == {
        "error": "ValueError: no such page",
        "hint": "Ask for a page that exists.",
    }


def test_one_outcome_a_failure_without_a_hint_reads_as_its_error():
    result = ToolResult(call_id="c1", name="researcher", error="Delegation failed: it stopped with max_steps")
    assert result.for_model() == "Delegation failed: it stopped with max_steps"


def test_one_outcome_a_result_recorded_in_the_older_text_encoded_shape_decodes_to_fields():
    """Histories recorded before the typed outcome still replay: `is_error` with the JSON inside `content`."""
    told = json.dumps({"error": "KeyError: 'x'", "hint": "Check argument names and types and try again."})
    old = ToolResult.model_validate({"call_id": "c1", "name": "n", "content": told, "is_error": True})
    assert (old.error, old.hint, old.content) == ("KeyError: 'x'", "Check argument names and types and try again.", "")
    assert old.for_model() == told
    plain = ToolResult.model_validate(
        {"call_id": "c1", "name": "n", "content": "Delegation failed: x", "is_error": True}
    )
    assert plain.error == "Delegation failed: x" and plain.for_model() == "Delegation failed: x"
    fine = ToolResult.model_validate({"call_id": "c1", "name": "n", "content": "4", "is_error": False})
    assert fine.content == "4" and not fine.is_error


def test_one_outcome_the_size_marker_names_what_was_cut_and_a_cut_failure_stays_a_failure():
    result = ToolResult.returned(CALL, "x" * 1000)
    cut = result.cut_to(100)
    assert cut.cut_chars == 900
    assert cut.for_model() == "x" * 100 + CUT_MARKER.format(cut=900, total=1000)
    assert result.cut_to(5000) is result
    failed = ToolResult.failure(CALL, "e" * 500).cut_to(50)
    assert failed.is_error and failed.for_model().startswith('{"error": "eee')


def test_one_outcome_every_wire_format_sends_the_same_text():
    results = [ToolResult.returned(CALL, {"a": 1}), ToolResult.failure(ToolCall(id="c2", name="lookup"), "boom")]
    message = Message(role="tool", tool_results=results)
    expected = [r.for_model() for r in results]
    _, blocks = anthropic._blocks(message)
    assert [b["content"] for b in blocks] == expected
    assert [b["is_error"] for b in blocks] == [False, True]
    assert [m["content"] for m in openai_chat._chat_message(message)] == expected
    assert [i["output"] for i in openai_responses._items(message)] == expected
    assert results_text(results[:1]) == f"Tool result: {expected[0]}"
    assert results_text(results[1:]) == f"Tool execution failed: {expected[1]}"
