"""A large tool result is kept once: the tool activity stores it, the model call and the archived step log name it."""

from __future__ import annotations

import pytest
from pydantic import Field
from temporalio.client import WorkflowHistory

from stalwart.activities import transcripts
from stalwart.activities.tools import tool
from stalwart.activities.transcripts import STORE_RESULTS_ABOVE_CHARS, MemoryBlobs, TranscriptError, TranscriptStore
from stalwart.contracts.agent import AgentSpec, Budgets, ScriptedReply, ScriptedToolCall
from stalwart.contracts.messages import Message, ToolCall, ToolResult, TranscriptRef
from stalwart.contracts.run import AgentResult
from stalwart.contracts.wire import Compact
from stalwart.workflows.conversation import CARRIED_RESULT_CHARS, CARRIED_RESULTS, latest_results
from stalwart.workflows.policies import RESULT_STEPS_INLINE_CHARS


def page_text(number: int, chars: int) -> str:
    line = f"page {number} line "
    return (line * (chars // len(line) + 1))[:chars]


@tool
def page(number: int, chars: int) -> str:
    """Returns one page of text, different for every page.

    Args:
        number: Which page.
        chars: How long it is.
    """
    return page_text(number, chars)


def reader(*pages: tuple[int, int]) -> AgentSpec:
    return AgentSpec(
        name="reader",
        tools=["page"],
        budgets=Budgets(max_steps=len(pages) + 2),
        scripted=[
            *(
                ScriptedReply(tool_calls=[ScriptedToolCall(name="page", arguments={"number": n, "chars": c})])
                for n, c in pages
            ),
            ScriptedReply(text="read"),
        ],
    )


def occurrences(histories: list[WorkflowHistory], text: str) -> int:
    """How often `text` is in the histories' events (their payloads' JSON is in the protobuf bytes as it is)."""
    return sum(event.SerializeToString().count(text.encode()) for history in histories for event in history.events)


async def test_a_large_result_reaches_the_model_whole_but_its_input_only_names_it(stalwart, worker_with):
    chars = STORE_RESULTS_ABOVE_CHARS * 3
    async with worker_with(page):
        handle = await stalwart.start(reader((1, chars)), "read page 1")
        result = await handle.result()
        sent = await handle.model_input(2)
        histories = await handle.histories()
    assert result.stop_reason == "done"
    [record] = [step for step in result.steps if step.role == "tool"]
    assert record.result == page_text(1, chars) and record.result_stored is not None
    [told] = [r for m in sent.messages for r in m.tool_results]
    assert told.content == page_text(1, chars), "the model read the whole result, filled in from storage"
    assert occurrences(histories, page_text(1, chars)) == 2, "the tool's completion and the result, not the input"


async def test_a_small_result_travels_inline(stalwart, worker_with):
    async with worker_with(page):
        handle = await stalwart.start(reader((1, 40)), "read page 1")
        result = await handle.result()
    [record] = [step for step in result.steps if step.role == "tool"]
    assert record.result == page_text(1, 40) and record.result_stored is None


async def test_a_long_step_log_ends_in_storage_and_the_result_joins_it_back(stalwart, worker_with):
    pages = [(n, 4000) for n in range(1, RESULT_STEPS_INLINE_CHARS // 4000 + 3)]
    async with worker_with(page):
        handle = await stalwart.start(reader(*pages), "read them all")
        raw = await stalwart.temporal.get_workflow_handle(handle.run_id, result_type=AgentResult).result()
        result = await handle.result()
        histories = await handle.histories()
    assert raw.steps == [] and raw.earlier, "the recorded result names the archive instead of repeating the steps"
    assert [s.result for s in result.steps if s.role == "tool"] == [page_text(n, c) for n, c in pages]
    assert occurrences(histories, page_text(3, 4000)) == 1, "once in history: the tool's completion"


async def test_a_stored_result_that_was_changed_is_refused_naming_the_shared_storage():
    blobs = MemoryBlobs()
    store = TranscriptStore(blobs)
    call = ToolCall(id="c1", name="page")
    kept = await store.keep_result("chain", ToolResult.returned(call, "y" * (STORE_RESULTS_ABOVE_CHARS + 1)))
    assert kept.stored is not None
    [key] = [k for k in blobs.blobs if "/results/" in k]
    blobs.blobs[key] = blobs.blobs[key].replace(b"y", b"z")
    with pytest.raises(TranscriptError, match="STALWART_STORAGE"):
        await TranscriptStore(blobs).filled("chain", [Message(role="tool", tool_results=[kept.by_reference()])])


async def test_the_stored_conversation_names_a_stored_result_and_reads_it_back_whole():
    blobs = MemoryBlobs()
    store = TranscriptStore(blobs)
    text = "w" * (STORE_RESULTS_ABOVE_CHARS * 2)
    kept = await store.keep_result("chain", ToolResult.returned(ToolCall(id="c1", name="page"), text))
    ref, _ = await store.append(
        TranscriptRef(chain_id="chain"), [Message(role="tool", tool_results=[kept.by_reference()])]
    )
    segment = blobs.blobs["chain/00000000.json"]
    assert text.encode() not in segment, "the conversation refers to the result, it does not hold it again"
    [message] = await TranscriptStore(blobs).read(ref)
    assert message.tool_results[0].content == text


async def test_a_worker_keeps_stored_results_in_memory_up_to_a_bound_in_bytes(monkeypatch):
    monkeypatch.setattr(transcripts, "CACHED_RESULT_BYTES", 3 * STORE_RESULTS_ABOVE_CHARS)
    blobs = MemoryBlobs()
    store = TranscriptStore(blobs)
    kept = [
        await store.keep_result("chain", ToolResult.returned(ToolCall(id=f"c{n}", name="page"), page_text(n, 1200)))
        for n in range(3)
    ]
    blobs.blobs.clear()  # what the store can still give now comes from its memory
    newest = await store.filled("chain", [Message(role="tool", tool_results=[kept[2].by_reference()])])
    assert newest[0].tool_results[0].content == page_text(2, 1200)
    with pytest.raises(TranscriptError, match="not in storage"):  # the oldest no longer fitted
        await store.filled("chain", [Message(role="tool", tool_results=[kept[0].by_reference()])])


class Example(Compact):
    name: str
    note: str | None = None
    count: int = 0
    flags: list[str] = []
    limit: int = 5
    data: object | None = None
    derived: list[str] = Field(default_factory=lambda fields: [])  # depends on the other fields: always written


def test_compact_json_leaves_out_only_fields_at_their_empty_default():
    assert Example(name="a").model_dump_json() == '{"name":"a","limit":5,"derived":[]}'
    assert Example(name="a", limit=0, data={}).model_dump_json() == '{"name":"a","limit":0,"data":{},"derived":[]}'
    assert Example.model_validate_json('{"name":"a","limit":5,"derived":[]}') == Example(name="a")
    assert Example(name="a").model_dump()["note"] is None, "a Python dump keeps every field"


def test_continue_as_new_carries_the_thrash_guards_latest_calls_within_its_bounds():
    many = {f"echo {n}": (n, "r") for n in range(CARRIED_RESULTS + 10)}
    carried = latest_results(many)
    assert list(carried) == list(many)[-CARRIED_RESULTS:], "the newest calls, in their order"
    large = {f"page {n}": (n, "x" * (CARRIED_RESULT_CHARS // 3)) for n in range(5)}
    assert list(latest_results(large)) == ["page 2", "page 3", "page 4"]
