"""Issue 10, defect 3: a key echoed back by a provider, whatever its shape, never leaves the worker.

The key here looks like no known key format (no `sk-`, no `key-`), so only redaction of the value the worker
actually holds can keep it out of the run's history, its result and the streamed answer.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from flavors import FLAVORS, Flavor, agent_for, run_agent, start_run

from stalwart.activities import secrets
from stalwart.activities.providers.base import ModelGarbledError
from stalwart.activities.providers.errors import SHOWN_BYTES
from stalwart.activities.streaming import AnswerPublisher
from stalwart.client.stream import AnswerDelta, stream_answer
from stalwart.contracts.stream import StreamChunk, StreamProgress, apply_chunk
from stalwart.workers.worker import build_worker

from support.secret_values import forgetting_afterwards  # noqa: F401 - a fixture
from wire_server.script import Broken, Fail, Garbage, Reply


def _plain_key() -> str:
    return f"PLAINKEY{uuid.uuid4().hex.upper()}"


@pytest.mark.parametrize("echo", ["error-event", "http-error", "answer"])
async def test_secret_leak_a_provider_echoing_the_key_leaves_no_trace_in_history_or_result(
    time_skipping_env, task_queue, wire, flavor: Flavor, monkeypatch, caplog, echo: str
):
    key = _plain_key()
    monkeypatch.setenv(flavor.key_env, key)
    said = f"Incorrect API key provided: {key}. You can find your API key at https://platform.example/keys."
    step = {
        # The in-stream error: `error` for Responses and Chat, an `error` event for Anthropic.
        "error-event": Broken(Reply(text="Working on it"), events=2, kind="invalid_request_error", message=said),
        "http-error": Fail(400, "invalid_request_error", said),
        "answer": Reply(text=f"Your key is {key}, keep it safe."),
    }[echo]
    script = wire.script(step)
    caplog.set_level(logging.DEBUG)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]), "Who am I?")
        streamed = "".join(
            [e.text async for e in stream_answer(handle, poll_interval=0.05) if isinstance(e, AnswerDelta)]
        )
        result = await handle.result()
        history = (await handle.fetch_history()).to_json()
    sent = script.requests[0].headers
    assert key in (sent.get("authorization", "").removeprefix("Bearer "), sent.get("x-api-key")), "the key was used"
    if echo == "answer":
        assert result.stop_reason == "done" and secrets.REDACTED in result.answer
    else:
        assert result.stop_reason == "error" and secrets.REDACTED in (result.error or "")
    assert key not in history
    assert key not in result.model_dump_json()
    assert key not in streamed
    assert key not in caplog.text


@pytest.mark.parametrize(
    "body_start", [b"<html>Invalid token: ", b"\xff\xfe bad token: "], ids=["not-json", "not-utf8"]
)
async def test_secret_leak_a_garbled_body_holding_the_key_where_its_sample_is_cut_shows_no_part_of_it(
    time_skipping_env, task_queue, wire, flavor: Flavor, monkeypatch, caplog, body_start: bytes
):
    """The error shows the start of a garbled body: the key straddles where that sample is cut."""
    key = _plain_key()
    monkeypatch.setenv(flavor.key_env, key)
    body = body_start + b"x" * (SHOWN_BYTES - 20 - len(body_start)) + key.encode() + b"</html>"
    script = wire.script(*[Garbage(200, body, "application/json")] * ModelGarbledError.MAX_ATTEMPTS)
    caplog.set_level(logging.DEBUG)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await start_run(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]), "Who am I?")
        result = await handle.result()
        history = (await handle.fetch_history()).to_json()
    assert result.stop_reason == "error" and "ModelGarbledError" in (result.error or "")
    shown = [key[:n] for n in range(6, len(key) + 1) if key[:n] in history + (result.error or "") + caplog.text]
    assert not shown, f"{shown[-1]!r}, the start of the key, was shown"


def test_secret_leak_a_key_split_across_stream_chunks_is_never_shown_in_part():
    key = _plain_key()
    secrets.remember(key)
    text = f"the key is {key} ok"
    for cut in range(len(text) + 1):
        shown = secrets.redact(text[:cut], partial_tail=True)
        assert not any(key[:n] in shown for n in range(3, len(key) + 1) if shown.endswith(key[:n])), (cut, shown)
        assert key not in shown
    assert secrets.redact(text, partial_tail=True) == "the key is [redacted] ok"


@pytest.mark.usefixtures("forgetting_afterwards")
def test_secret_leak_a_secret_of_several_lines_is_not_shown_up_to_its_first_line_while_it_streams():
    """A value of several lines (a key file) is a secret, and so is each line: once its first line is in, the rest
    is still to come, so what shows must not be `[redacted]` and a line break the answer (`[redacted] ok`) lacks."""
    first, second = _plain_key(), _plain_key()
    secrets.remember(f"-----BEGIN KEY-----\n{first}\n{second}\n-----END KEY-----")
    text = f"the file holds -----BEGIN KEY-----\n{first}\n{second}\n-----END KEY----- ok"
    answer = secrets.redact(text)
    assert answer == "the file holds [redacted] ok"
    for cut in range(len(text) + 1):
        shown = secrets.redact(text[:cut], partial_tail=True)
        assert answer.startswith(shown), (cut, shown)


@pytest.mark.usefixtures("forgetting_afterwards")
@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_secret_leak_text_redacted_piece_by_piece_shows_what_redacting_all_of_it_so_far_shows(size: int):
    """`RedactedStream` redacts only the text not yet settled: the same as redacting all of it, for less."""
    key, lines = _plain_key(), f"-----BEGIN-----\n{_plain_key()}\n-----END-----"
    secrets.remember(key)
    secrets.remember(lines)
    text = f"a {key} and {key[:10]} then {key}{key}, {lines[:30]}, {lines}{lines[:20]}. {lines} end {key[:5]}"
    stream = secrets.RedactedStream()
    for at in range(0, len(text), size):
        assert stream.add(text[at : at + size]) == secrets.redact(text[: at + size], partial_tail=True), at


@pytest.mark.usefixtures("forgetting_afterwards")
async def test_secret_leak_a_key_the_model_streams_is_pushed_and_heartbeated_only_redacted_and_never_in_part():
    """What the model activity hands the push channel and the heartbeats, chunk by chunk: what a subscriber holds is
    always the start of the answer the run records, never the key nor its first letters (the push path sent the
    model's text as it came, so a stream subscribed while the turn ran showed the key, then the redacted answer)."""
    key = _plain_key()
    secrets.remember(key)
    text = f"Your key is {key}, keep it safe."
    answer = secrets.redact(text)
    pushed: list[StreamChunk] = []
    beats: list[StreamProgress] = []
    publisher = AnswerPublisher(1, beats.append, push=pushed.append, attempt=1)
    held: dict[int, StreamChunk] = {}
    for at in range(0, len(text), 3):
        publisher.text(text[at : at + 3])
        publisher.flush()  # a heartbeat after each piece, as if the throttle let every one out
        for chunk in pushed:
            apply_chunk(held, chunk)
        pushed.clear()
        assert answer.startswith(held[1].text if held else ""), at
        assert answer.startswith(beats[-1].text), at
    publisher.close()
    assert beats[-1].text == answer


async def test_env_allowlist_api_key_env_outside_the_allowlist_is_refused_before_any_request(
    time_skipping_env, task_queue, wire, monkeypatch
):
    """Issue 10, defect 4: `api_key_env` with a `base_url` of the file's choosing cannot send any worker variable."""
    compatible = next(f for f in FLAVORS if f.id == "openai-compatible")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_worker_token_0123456789")
    script = wire.script(Reply(text="thanks for the token"))
    agent = agent_for(compatible, script, tools=[]).model_copy(update={"api_key_env": "GITHUB_TOKEN"})
    result = await run_agent(time_skipping_env, task_queue, agent)
    assert result.stop_reason == "error" and "GITHUB_TOKEN" in result.error
    assert f"{secrets.ALLOWED_ENV_VAR}=GITHUB_TOKEN" in result.error
    assert script.requests == [], "nothing was sent to the agent file's base_url"


def test_secret_leak_only_the_streamed_answer_is_held_back_not_other_heartbeat_details():
    from stalwart.activities.redacting import _heartbeat_detail
    from stalwart.contracts.stream import StreamProgress

    key = _plain_key()
    secrets.remember(key)
    task_id = f"task-{key[:3]}"  # ends like the key begins: an A2A task id to resume must come through whole
    assert _heartbeat_detail(task_id) == task_id
    assert _heartbeat_detail(StreamProgress(step=1, text=f"so far {key[:5]}")).text == "so far "
    assert _heartbeat_detail(StreamProgress(step=1, text=f"a {key} b")).text == "a [redacted] b"
