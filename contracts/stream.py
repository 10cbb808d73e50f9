"""What the model activity reports, as heartbeat details, about the answer it is generating.

Heartbeat details live in the server's state of the pending activity, not in
the workflow history, so streaming a long answer adds no history events; a
client reads them with `DescribeWorkflowExecution` (see `client/stream.py`).
"""

from __future__ import annotations

from stalwart.contracts.model import Contract


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
