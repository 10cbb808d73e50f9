"""A local OpenAI-compatible model for `bench/peers.py`: Chat Completions over real HTTP, in a process of its own.

Every side of the comparison sends its requests here, through its own SDK and HTTP client, so each pays for its
own path to a model and none for the model itself. The replies depend on the request alone, so every side gets
the same ones whatever it sent before: while the conversation holds fewer tool results than the first user
message asks for (`Call echo N times`), the model calls the first tool offered with `{"text": "ping K"}` (K the
results so far, so no two calls are alike); then it answers `done`. Each reply waits `latency` seconds first.

It answers a streamed request (Stalwart's provider streams) with Server-Sent Events in chunks, and any other (the
peers' model activities do not stream) with one JSON body, both as the OpenAI API does, and keeps connections
open between requests as a provider does. It runs in its own process so that the CPU the benchmark counts in its
own process is the workers' and the client's, not the model's (`start` starts it; `main` is that process).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CALLS = re.compile(r"Call (\w+) (\d+) times")
"""How the first user message says how many tool calls to make before answering."""
ANSWER = "done"
MODEL = "bench-model"
"""The model name every side asks for."""
INSTRUCTIONS = "You are a benchmark agent. Call the echo tool as often as the user asks, then answer done."
"""The system prompt every side sends."""
FAKE_MODEL_URL = "STALWART_BENCH_FAKE_MODEL_URL"
"""Where the benchmark puts the fake model's base URL for an agent built as its module is imported."""
KEY_ENV = "STALWART_BENCH_KEY"
"""The variable that holds the key every side sends (the fake model reads none)."""


def prompt(calls: int) -> str:
    """The user message that makes the model call `echo` `calls` times, then answer."""
    return f"Call echo {calls} times, then say done."


def reply(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The text and tool calls that answer a Chat Completions request."""
    messages = body.get("messages", [])
    wanted = next(
        (CALLS.search(_text(m)) for m in messages if m.get("role") == "user" and CALLS.search(_text(m))), None
    )
    made = sum(1 for m in messages if m.get("role") == "tool")
    tools = body.get("tools") or []
    if wanted is None or not tools or made >= int(wanted.group(2)):
        return ANSWER, []
    name = tools[0]["function"]["name"]
    call = {
        "id": f"call_{made}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"text": f"ping {made}"})},
    }
    return "", [call]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


USAGE = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28, "prompt_tokens_details": {"cached_tokens": 0}}


def completion(model: str, text: str, calls: list[dict[str, Any]]) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": USAGE,
        }
    ).encode()


def chunks(model: str, text: str, calls: list[dict[str, Any]]) -> list[bytes]:
    """The same reply as Server-Sent Events: the role, the text, each call whole, the finish, the usage."""

    def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        data = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": model}
        return f"data: {json.dumps({**data, 'choices': choices, **extra})}\n\n".encode()

    def delta(value: dict[str, Any], finish: str | None = None) -> bytes:
        return event([{"index": 0, "delta": value, "finish_reason": finish}])

    out = [delta({"role": "assistant", "content": ""})]
    if text:
        out.append(delta({"content": text}))
    out += [delta({"tool_calls": [{"index": i, **call}]}) for i, call in enumerate(calls)]
    out.append(delta({}, "tool_calls" if calls else "stop"))
    out.append(event([], usage=USAGE))
    out.append(b"data: [DONE]\n\n")
    return out


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    try:
        while request_line := await reader.readline():
            if not request_line.strip():
                continue
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
            text, calls = reply(body)
            if latency:
                await asyncio.sleep(latency)
            model = body.get("model", "")
            if body.get("stream"):
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    + b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks(model, text, calls))
                    + b"0\r\n\r\n"
                )
            else:
                data = completion(model, text, calls)
                head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
                writer.write(head.encode() + data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):  # cancelled: the model stops
        pass
    finally:
        writer.close()


async def _main(latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: _serve(r, w, latency), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    # The benchmark holds this process's standard input: when it ends, however it ends, so does the model.
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


def main() -> None:
    asyncio.run(_main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0))


@contextmanager
def start(latency: float) -> Iterator[str]:
    """The model in a process of its own, answering after `latency` seconds; yields its OpenAI base URL."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from bench.fake_model import main; main()", repr(latency)],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the fake model did not start (it printed {port!r}); run it alone to see why")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
