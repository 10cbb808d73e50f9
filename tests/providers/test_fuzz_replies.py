"""Issue 10, fuzz: seeded mutations of provider replies through the wire server and the real SDKs.

Whatever a provider sends (junk bodies, odd statuses, error events of unknown kinds, text full of control
characters, tool calls with broken arguments, absurd token counts, streams cut short), the run ends:
finished, or stopped with a message saying why; never a hang, a traceback or a retry loop.
"""

from __future__ import annotations

import random

import pytest
from flavors import FLAVORS, agent_for, run_agent

from wire_server.script import Broken, Call, Cut, Fail, Garbage, Reply, Step

pytestmark = pytest.mark.slow

SEED = 10
CASES = 24
STOPS = {"done", "error", "max_steps", "max_tokens", "max_cost"}

TEXTS = [
    "",
    "plain answer",
    "\x00\x1b[2J\x07\u202e\ufffd",
    "🙂" * 200,
    "x" * 20_000,
    '{"tool": "calculator", "arguments": ',
    "</s><|im_end|>",
]
ARGUMENTS = ["", "{", "[]", "null", '{"expression": 17}', '{"expression": "1/0"}', "\xff\xfe", '{"a": ' * 200]
KINDS = ["invalid_request_error", "server_error", "overloaded_error", "rate_limit_error", "unknown_kind", "", "x" * 300]
STATUSES = [200, 201, 204, 301, 400, 401, 403, 404, 409, 413, 418, 422, 429, 500, 502, 503, 529, 599]
TOKENS = [0, -5, 1, 10**6, 2**63, 10**30]


def _reply(chance: random.Random) -> Reply:
    calls: tuple[Call, ...] = ()
    if chance.random() < 0.4:
        name = chance.choice(["calculator", "no_such_tool", "", "calc ulator"])
        calls = (Call(name, raw_arguments=chance.choice(ARGUMENTS)),)
    return Reply(
        text=chance.choice(TEXTS),
        calls=calls,
        input_tokens=chance.choice(TOKENS),
        output_tokens=chance.choice(TOKENS),
        truncated=chance.random() < 0.1,
        usage=chance.random() < 0.8,
    )


def _step(chance: random.Random) -> Step:
    kind = chance.randrange(5)
    if kind == 0:
        return Garbage(
            chance.choice(STATUSES),
            chance.randbytes(chance.randint(0, 300)),
            chance.choice(["application/json", "text/event-stream", "text/html"]),
        )
    if kind == 1:
        return Fail(chance.choice(STATUSES[4:]), chance.choice(KINDS), chance.choice(TEXTS))
    if kind == 2:
        return Broken(
            _reply(chance), events=chance.randint(0, 6), kind=chance.choice(KINDS), message=chance.choice(TEXTS)
        )
    if kind == 3:
        return Cut(_reply(chance), events=chance.randint(0, 6))
    return _reply(chance)


def _cases() -> list[tuple[str, object, list[Step]]]:
    chance = random.Random(SEED)
    return [
        (f"reply-{n}", chance.choice(FLAVORS), [_step(chance), _step(chance), Reply(text="recovered")])
        for n in range(CASES)
    ]


@pytest.mark.parametrize(("case", "flavor", "steps"), _cases(), ids=[case for case, _, _ in _cases()])
async def test_fuzz_mutated_provider_replies_end_the_run_with_an_answer_or_a_reason(
    time_skipping_env, task_queue, wire, monkeypatch, case, flavor, steps
):
    monkeypatch.setenv(flavor.key_env, f"sk-test-{flavor.id}-0123456789")
    script = wire.script(*steps)
    agent = agent_for(flavor, script, budgets={"max_steps": 4})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert result.stop_reason in STOPS, (case, result.stop_reason)
    if result.stop_reason == "error":
        assert result.error and "Traceback" not in result.error, (case, result.error)
    assert 0 <= result.usage.total_tokens <= 10**13, (case, result.usage)
    assert len(script.requests) <= 12, f"{case}: {len(script.requests)} requests: a retry loop"
