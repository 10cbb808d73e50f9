"""What our model call adds to a bare SDK call: one streamed turn against the local wire-format server.

Each row streams the same short answer N times (default 200) from the wire
server the provider tests use, through the real SDK, in this process, with
no Temporal in the way:

- `bare`: one SDK client made once, `create(stream=True)`, every event read;
- `ours`: the provider's `complete` on the worker's kept clients (`SdkClients`):
  request building, both stream deadlines, folding events into a turn;
- `fresh`: the same, but with a new client per turn, closed after it (what
  Stalwart did before clients were kept per worker).

The wire server closes each connection after its reply, so `fresh` pays a
client's construction but not the TLS handshake a real provider would add.

    .venv/bin/python -m bench.model_turn [--turns 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bench.options import count

# The SDKs and the providers are loaded where they are used, after argparse: `--help` or a refused option answers
# without their seconds of imports. None is imported inside a timed turn.
if TYPE_CHECKING:
    from stalwart.activities.providers.base import StreamingModelProvider
    from stalwart.activities.providers.clients import SdkClient, SdkClients
    from stalwart.contracts.activities import ModelContext
    from tests.wire_server.server import WireServer

ANSWER = "The answer is 395, and that is all there is to it."
KEY = "sk-bench-0123456789"
KEY_ENV = "STALWART_BENCH_KEY"
QUESTION: Any = {"role": "user", "content": "What is 17*23+4?"}


class _Ignore:
    def text(self, delta: str) -> None: ...
    def tool_call(self) -> None: ...
    def chunk(self) -> None: ...


def _context(model: str, base_url: str) -> ModelContext:
    from stalwart.contracts.activities import ModelContext
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import Message

    agent = AgentSpec(name="bench", model=model, base_url=base_url, api_key_env=KEY_ENV)
    return ModelContext(agent=agent, step=1, tools=[], messages=[Message(role="user", content="What is 17*23+4?")])


async def _timed(turns: int, turn: Callable[[], Awaitable[object]]) -> list[float]:
    seconds = []
    for _ in range(turns):
        started = time.perf_counter()
        await turn()
        seconds.append(time.perf_counter() - started)
    return seconds


async def _chat_rows(wire: WireServer, turns: int) -> dict[str, list[float]]:
    import openai

    from stalwart.activities.providers.calling import Endpoint
    from stalwart.activities.providers.openai_chat import OpenAIChatProvider
    from tests.wire_server.script import Reply

    script = wire.script(*[Reply(text=ANSWER)] * (3 * turns + 3))
    client = openai.AsyncOpenAI(api_key=KEY, base_url=script.openai_base_url, max_retries=0)
    return await _compare(
        turns,
        client,
        lambda: client.chat.completions.create(model="gpt-4.1-mini", messages=[QUESTION], stream=True),
        lambda clients: OpenAIChatProvider(Endpoint("openai", KEY_ENV), clients),
        _context("openai:gpt-4.1-mini", script.openai_base_url),
    )


async def _anthropic_rows(wire: WireServer, turns: int) -> dict[str, list[float]]:
    import anthropic

    from stalwart.activities.providers.anthropic import AnthropicProvider
    from tests.wire_server.script import Reply

    script = wire.script(*[Reply(text=ANSWER)] * (3 * turns + 3))
    client = anthropic.AsyncAnthropic(api_key=KEY, base_url=script.anthropic_base_url, max_retries=0)
    return await _compare(
        turns,
        client,
        lambda: client.messages.create(model="claude-haiku-4-5", max_tokens=1024, messages=[QUESTION], stream=True),
        lambda clients: AnthropicProvider(clients),
        _context("anthropic:claude-haiku-4-5", script.anthropic_base_url),
    )


async def _compare(
    turns: int,
    client: SdkClient,
    bare_stream: Callable[[], Awaitable[Any]],
    provider: Callable[[SdkClients], StreamingModelProvider],
    context: ModelContext,
) -> dict[str, list[float]]:
    from stalwart.activities.providers.clients import SdkClients

    kept = SdkClients()

    async def bare() -> None:
        async for _ in await bare_stream():
            pass

    async def ours() -> None:
        await provider(kept).complete(context, _Ignore())

    async def fresh() -> None:
        clients = SdkClients()
        try:
            await provider(clients).complete(context, _Ignore())
        finally:
            await clients.aclose()

    try:
        return await _rows(turns, bare, ours, fresh)
    finally:
        await client.close()
        await kept.aclose()


async def _rows(turns: int, *kinds: Callable[[], Awaitable[None]]) -> dict[str, list[float]]:
    """Each kind once as a warm-up, then `turns` of each, interleaved in blocks of ten."""
    rows: dict[str, list[float]] = {kind.__name__: [] for kind in kinds}
    for kind in kinds:
        await kind()
    for _ in range(0, turns, 10):
        for kind in kinds:
            rows[kind.__name__] += await _timed(min(10, turns - len(rows[kind.__name__])), kind)
    return rows


async def main(turns: int) -> None:
    from tests.wire_server.server import WireServer

    os.environ[KEY_ENV] = KEY
    wire = WireServer()
    await wire.start()
    try:
        results = {"openai chat": await _chat_rows(wire, turns), "anthropic": await _anthropic_rows(wire, turns)}
    finally:
        await wire.stop()
    print(f"{turns} streamed turns of each kind per provider, interleaved; median milliseconds per turn")
    for provider, rows in results.items():
        medians = {kind: statistics.median(seconds) * 1000 for kind, seconds in rows.items()}
        print(
            f"{provider:>12}: "
            + "  ".join(f"{kind} {ms:6.2f} ms" for kind, ms in medians.items())
            + f"  (ours/bare {medians['ours'] / medians['bare']:.2f}, "
            f"fresh/bare {medians['fresh'] / medians['bare']:.2f})"
        )
    chat = {kind: statistics.median(seconds) for kind, seconds in results["openai chat"].items()}
    print(f"ratio: {chat['ours'] / chat['bare']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--turns", type=count, default=200, help="measured turns of each kind per provider (default 200)"
    )
    turns = parser.parse_args().turns
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(turns))
