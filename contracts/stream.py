"""What the model activity reports, as heartbeat details, about the answer it is generating.

Heartbeat details live in the server's state of the pending activity, not in
the workflow history, so streaming a long answer adds no history events; a
client reads them with `DescribeWorkflowExecution` (see `client/stream.py`).
"""

from __future__ import annotations

import re

from stalwart.contracts.model import Contract

IDENTITY_MARK = " stream="
"""What a worker's identity carries after its usual identity: the `host:port` of its stream broker."""
_ADDRESS = re.compile(r" stream=(\S+:\d{1,5})$")


def broker_address(identity: str) -> str | None:
    """The `host:port` of the stream broker a worker's identity names, or None for a worker without one."""
    matched = _ADDRESS.search(identity)
    return matched.group(1) if matched else None


class StreamProgress(Contract):
    """The answer text one attempt of a model turn has produced so far.

    `text` is cumulative, so a client that missed a heartbeat loses nothing and
    a retried attempt's text can be compared with what was shown.
    `retracted` is set when the turn turned out to call tools: text already
    shown for this step was not the answer.
    """

    step: int
    text: str = ""
    retracted: bool = False


class StreamChunk(Contract):
    """What a worker's stream broker pushes to a subscriber of a run (`activities/stream_broker.py`).

    Text goes as deltas, so a long answer costs its bytes once, not once per chunk: `text` follows the first
    `at` characters of attempt `attempt`'s text for model step `step`. A subscriber that (re)connects is sent
    each turn in flight as one chunk with `at=0`. `retracted` withdraws the step's text (the turn calls a tool);
    `ended` says the attempt is over, so its text is read from the step log from now on.
    """

    step: int
    attempt: int = 1
    at: int = 0
    text: str = ""
    retracted: bool = False
    ended: bool = False


def apply_chunk(turns: dict[int, StreamChunk], chunk: StreamChunk) -> None:
    """Bring a run's turns in flight (each step's text so far, `at=0`, newest attempt) to after `chunk`."""
    held = turns.get(chunk.step)
    if chunk.ended:
        if held is not None and held.attempt <= chunk.attempt:
            del turns[chunk.step]
        return
    if held is None or held.attempt < chunk.attempt:
        held = StreamChunk(step=chunk.step, attempt=chunk.attempt)
    elif held.attempt > chunk.attempt:
        return
    if chunk.retracted:
        turns[chunk.step] = held.model_copy(update={"text": "", "retracted": True})
    elif chunk.at <= len(held.text):  # a gap cannot happen on one connection; if it did, the heartbeats tell
        turns[chunk.step] = held.model_copy(update={"text": held.text[: chunk.at] + chunk.text})
