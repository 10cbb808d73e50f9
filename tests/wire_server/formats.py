"""The three wire formats: a scripted Reply as streamed SSE events or as one JSON body,
and errors as each provider sends them."""

from __future__ import annotations

import json
import re
from typing import Any

from .script import Reply

_WORDS = re.compile(r"\S+\s*|\s+")


def words(text: str) -> list[str]:
    return _WORDS.findall(text)


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


# -- OpenAI Chat Completions ----------------------------------------------------


def chat_stream(reply: Reply, model: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": w}) for w in words(reply.text)]
    for i, call in enumerate(reply.calls):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        text = call.arguments_text
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": text[j : j + 8]}}]})
            for j in range(0, len(text), 8)
        ]
    out.append(chunk({}, "length" if reply.truncated else "tool_calls" if reply.calls else "stop"))
    if reply.usage:
        out.append(
            sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": _chat_usage(reply),
                }
            )
        )
    out.append(sse("[DONE]"))
    return out


def _chat_usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
    }


def chat_error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def chat_error_event(kind: str, message: str) -> bytes:
    return sse(chat_error(kind, message))


def responses_error_event(kind: str, message: str) -> bytes:
    return sse({"type": "error", "code": kind, "message": message, "param": None, "sequence_number": 9999}, "error")


def anthropic_error_event(kind: str, message: str) -> bytes:
    return sse(anthropic_error(kind, message), "error")


# -- OpenAI Responses -----------------------------------------------------------


def responses_stream(reply: Reply, model: str) -> list[bytes]:
    seq = iter(range(1_000_000))
    out: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        out.append(sse({"type": kind, "sequence_number": next(seq), **data}, kind))

    emit("response.created", response=_response(model, [], "in_progress", None))
    items: list[dict[str, Any]] = []
    if reply.thinking:
        emit("response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1", "summary": []})
        item = _reasoning_item(reply.thinking)
        emit("response.output_item.done", output_index=0, item=item)
        items.append(item)
    if reply.text:
        index = len(items)
        emit(
            "response.output_item.added",
            output_index=index,
            item={"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []},
        )
        for w in words(reply.text):
            emit(
                "response.output_text.delta", item_id="msg_1", output_index=index, content_index=0, delta=w, logprobs=[]
            )
        item = _message_item(reply.text)
        emit("response.output_item.done", output_index=index, item=item)
        items.append(item)
    for i, call in enumerate(reply.calls):
        index = len(items)
        item = {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": call.name,
            "arguments": "",
            "status": "in_progress",
        }
        emit("response.output_item.added", output_index=index, item=item)
        text = call.arguments_text
        for j in range(0, len(text), 8):
            emit("response.function_call_arguments.delta", item_id=f"fc_{i}", output_index=index, delta=text[j : j + 8])
        done = {**item, "arguments": text, "status": "completed"}
        emit("response.output_item.done", output_index=index, item=done)
        items.append(done)
    if reply.truncated:
        response = _response(model, items, "incomplete", reply)
        response["incomplete_details"] = {"reason": "max_output_tokens"}
        emit("response.incomplete", response=response)
    else:
        emit("response.completed", response=_response(model, items, "completed", reply))
    return out


def _reasoning_item(thinking: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": thinking}],
        "encrypted_content": "enc-rs-1",
    }


def _message_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(model: str, output: list[dict[str, Any]], status: str, reply: Reply | None) -> dict[str, Any]:
    usage = None
    if reply is not None and reply.usage:
        usage = {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


# -- Anthropic Messages ---------------------------------------------------------


def anthropic_stream(reply: Reply, model: str) -> list[bytes]:
    out: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        out.append(sse({"type": kind, **data}, kind))

    emit(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _anthropic_usage(reply, output=1),
        },
    )
    index = 0
    if reply.thinking:
        emit("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""})
        emit("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": reply.thinking})
        emit("content_block_delta", index=index, delta={"type": "signature_delta", "signature": "sig-thinking-1"})
        emit("content_block_stop", index=index)
        index += 1
    if reply.text:
        emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for w in words(reply.text):
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": w})
        emit("content_block_stop", index=index)
        index += 1
    for i, call in enumerate(reply.calls):
        emit(
            "content_block_start",
            index=index,
            content_block={"type": "tool_use", "id": f"toolu_{i}", "name": call.name, "input": {}},
        )
        text = call.arguments_text
        for j in range(0, len(text), 8):
            emit(
                "content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": text[j : j + 8]}
            )
        emit("content_block_stop", index=index)
        index += 1
    emit(
        "message_delta",
        delta={
            "stop_reason": "max_tokens" if reply.truncated else "tool_use" if reply.calls else "end_turn",
            "stop_sequence": None,
        },
        usage={"output_tokens": reply.output_tokens if reply.usage else 0},
    )
    emit("message_stop")
    return out


def _anthropic_usage(reply: Reply, output: int) -> dict[str, Any]:
    if not reply.usage:  # the Messages schema requires the fields: a server that counts nothing sends zeros
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": reply.input_tokens - reply.cached_tokens,
        "cache_read_input_tokens": reply.cached_tokens,
        "cache_creation_input_tokens": 0,
        "output_tokens": output,
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
