"""How long the first token of a streamed answer takes to reach a caller of `RunHandle.stream()`.

The model is the local wire-format server the provider tests use
(`tests/wire_server`), speaking OpenAI Chat Completions to the real `openai`
SDK; it notes when it writes each reply's first event. Before that event it
waits 0 to one poll interval (spread evenly over the samples, as a real
model's time to first token varies), so the token comes at every phase of
`stream()`'s polling. Each sample streams the same answer word by word
(`--pause` seconds between events):

- `bare`: the SDK's `create(stream=True)` in this process, read directly;
  the latency is from the server writing its first event to the SDK
  yielding the first chunk with text;
- `push`: a run of a one-turn agent on our worker (in this process, on a
  fresh in-memory dev server), followed with `RunHandle.stream()`; the
  latency is from the server writing its first event to `stream()`
  yielding the first `AnswerDelta`. The path is: the model activity reads
  the token and hands it to the worker's stream broker, which sends it over
  TCP to `stream()`, subscribed since the run started
  (`activities/stream_broker.py`, `client/push.py`);
- `poll`: the same with `stream(push=False)`, the path before the push
  channel and the fallback for a worker without one: the token goes out as
  heartbeat details (later text at most every 50 ms, which the SDK throttles
  to 100 ms), the server keeps them, and `stream()` polls the run's
  description (default every 100 ms), so most of the difference is the wait
  for the next poll.

It prints the median and the 95th percentile of each latency and of each
difference from bare (sample by sample).

    .venv/bin/python -m bench.first_token [--samples 40] [--pause 0.05] [--poll 0.1]

The last line is `ratio: X.XX`, the median of push over the median of bare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import TYPE_CHECKING

from bench.options import count, seconds

if TYPE_CHECKING:  # the rest loads where it is used, after the arguments are parsed: a usage error is said at once
    from stalwart.client.api import StalwartClient
    from tests.wire_server.script import Stall
    from tests.wire_server.server import Script, WireServer

ANSWER = " ".join(f"word{n}" for n in range(40))
KEY = "sk-bench-first-token-0123456789"
KEY_ENV = "STALWART_BENCH_KEY"
QUEUE = "bench-first-token"


def _first_event_at(script: Script) -> float:
    [request] = script.requests
    if request.first_event_at is None:
        raise RuntimeError("the wire server wrote no event for the streamed reply")
    return request.first_event_at


def thinking_times(samples: int, poll: float) -> list[float]:
    """The model's wait before its first token in each sample: spread evenly over one poll interval.

    A real model's time to first token varies, so the token lands at any moment between two of `stream()`'s
    polls. With none, every sample's token came at the same moment after the run's start, so at the same
    phase of the polling that began with it, and the figures measured that phase, not the wait for a poll:
    a median of +16 ms with polls 100 ms apart.
    """
    return [(n + 0.5) / samples * poll for n in range(samples)]


def _reply(pause: float, thinking: float) -> Stall:
    from tests.wire_server.script import Reply, Stall

    return Stall(seconds=thinking, then=Reply(text=ANSWER, pause=pause))


async def bare_latency(wire: WireServer, pause: float, thinking: float) -> float:
    import openai

    script = wire.script(_reply(pause, thinking))
    client = openai.AsyncOpenAI(api_key=KEY, base_url=script.openai_base_url, max_retries=0)
    try:
        stream = await client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "talk"}], stream=True
        )
        first = None
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.monotonic()
        assert first is not None, "the stream carried no text"
        return first - _first_event_at(script)
    finally:
        await client.close()


async def our_latency(
    stalwart: StalwartClient, wire: WireServer, pause: float, poll: float, thinking: float, *, push: bool = True
) -> float:
    from stalwart.client.stream import AnswerDelta
    from stalwart.contracts.agent import AgentSpec

    script = wire.script(_reply(pause, thinking))
    agent = AgentSpec(
        name="bench-first-token", model="openai:gpt-4.1-mini", base_url=script.openai_base_url, api_key_env=KEY_ENV
    )
    handle = await stalwart.start(agent, "talk")
    first = None
    async for event in handle.stream(poll_interval=poll, push=push):
        if first is None and isinstance(event, AnswerDelta) and event.text:
            first = time.monotonic()
    result = await handle.result()
    if result.stop_reason != "done" or first is None:
        raise RuntimeError(f"the benchmark run stopped with {result.stop_reason}: {result.error}")
    return first - _first_event_at(script)


def _summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"{name:>11}: median {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms"


async def main(samples: int, pause: float, poll: float) -> None:
    from bench.harness import scratch_storage
    from stalwart.client.api import StalwartClient
    from stalwart.workers.dev_server import DevServer
    from stalwart.workers.worker import build_worker
    from tests.wire_server.server import WireServer

    os.environ[KEY_ENV] = KEY
    wire = WireServer()
    await wire.start()
    try:
        with scratch_storage(unless_configured=True):
            async with DevServer(port=None, ui_port=None) as server:
                stalwart = await StalwartClient.connect(server.address, task_queue=QUEUE)
                async with build_worker(stalwart.temporal, task_queue=QUEUE):
                    await our_latency(stalwart, wire, pause, poll, 0.0)  # warm-up: SDK clients, worker caches
                    await our_latency(stalwart, wire, pause, poll, 0.0, push=False)
                    await bare_latency(wire, pause, 0.0)
                    pushed, polled, bare = [], [], []
                    for thinking in thinking_times(samples, poll):  # interleaved: the machine's load touches all
                        pushed.append(await our_latency(stalwart, wire, pause, poll, thinking))
                        polled.append(await our_latency(stalwart, wire, pause, poll, thinking, push=False))
                        bare.append(await bare_latency(wire, pause, thinking))
    finally:
        await wire.stop()
    print(
        f"{samples} samples each; {len(ANSWER.split())} words streamed {pause * 1000:.0f} ms apart; "
        f"stream() polls every {poll * 1000:.0f} ms; the first token comes 0 to {poll * 1000:.0f} ms after the "
        "request (spread evenly); latency = first token written by the server -> received"
    )
    print(_summary("bare SDK", bare))
    print(_summary("push", pushed))
    print(_summary("poll", polled))
    print(_summary("difference", [o - b for o, b in zip(pushed, bare, strict=True)]) + "   (push - bare)")
    print(_summary("difference", [o - b for o, b in zip(polled, bare, strict=True)]) + "   (poll - bare)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"ratio: {statistics.median(pushed) / statistics.median(bare):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=count, default=40)
    parser.add_argument("--pause", type=seconds, default=0.05, help="seconds between the streamed events")
    parser.add_argument("--poll", type=seconds, default=0.1, help="RunHandle.stream()'s poll interval")
    args = parser.parse_args()
    from stalwart.workers.process_exit import run_then_exit  # after argparse: --help loads nothing heavy

    run_then_exit(main(args.samples, args.pause, args.poll))
