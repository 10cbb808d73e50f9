"""An id the namespace has no run of, given to the Python API: `RunNotFound`, as docs/errors.md says, from every
read and every act; and still the SDK's `RPCError` (NOT_FOUND) it was, for code that caught that."""

from __future__ import annotations

import pytest
from temporalio.service import RPCError, RPCStatusCode

import stalwart
from stalwart.client.api import StalwartClient
from stalwart.client.server_errors import RunNotFound


@pytest.fixture
def unknown(time_skipping_env, task_queue):
    return StalwartClient(time_skipping_env.client, task_queue=task_queue).get("no-such-run")


async def _streamed(handle):
    return [event async for event in handle.stream()]


async def _events(handle):
    return [event async for event in handle.history_events()]


CALLS = {
    "result": lambda handle: handle.result(),
    "state": lambda handle: handle.state(),
    "describe": lambda handle: handle.describe(),
    "pending_approvals": lambda handle: handle.pending_approvals(),
    "approve": lambda handle: handle.approve("call_1"),
    "reject": lambda handle: handle.reject("call_1", reason="no"),
    "cancel": lambda handle: handle.cancel(),
    "history": lambda handle: handle.history(),
    "run_input": lambda handle: handle.run_input(),
    "stream": _streamed,
    "history_events": _events,
}
"""Every read and act of a `RunHandle`, the async generators read to their end."""


@pytest.mark.parametrize("call", CALLS)
async def test_an_unknown_run_id_is_run_not_found_and_still_the_sdks_not_found(unknown, call):
    with pytest.raises(stalwart.NotFound) as raised:
        await CALLS[call](unknown)
    err = raised.value
    assert isinstance(err, RunNotFound) and isinstance(err, stalwart.StalwartError)
    assert isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND
    assert "`stalwart runs` lists the runs" in str(err) and err.message


async def test_a_message_to_an_unknown_session_is_run_not_found(time_skipping_env, task_queue):
    session = StalwartClient(time_skipping_env.client, task_queue=task_queue).session("no-such-session")
    with pytest.raises(RunNotFound):
        await session.send("hello")
