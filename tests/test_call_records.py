"""A call's record in shared storage, as a later attempt on another worker reads it (`activities/call_records.py`).

These run the attempts in an activity context, without a server; tests/test_calls_across_workers.py runs them on
two real workers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from stalwart.activities import call_records
from stalwart.activities import in_flight as in_flight_module
from stalwart.activities.call_records import CallKey, CallRecord, CallRecords
from stalwart.activities.in_flight import InFlight
from stalwart.activities.transcripts import MemoryBlobs
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.messages import AssistantTurn, ToolCall, ToolResult, Usage

CALL = ToolCall(id="call_1", name="write", arguments={"value": "v"})
RESULT = ToolResult(call_id="call_1", name="write", data={"written": ["v", 1, None]}, hint=None)


def _attempt(number: int) -> ActivityEnvironment:
    environment = ActivityEnvironment()
    environment.payload_converter = DATA_CONVERTER.payload_converter
    environment.info = dataclasses.replace(environment.info, attempt=number, activity_id="7")
    return environment


def _key(environment: ActivityEnvironment) -> CallKey:
    key = CallKey.of(environment.info)
    assert key is not None
    return key


async def _not_run() -> ToolResult:
    raise AssertionError("the call ran again")


async def test_a_quick_call_writes_nothing_to_storage():
    blobs = MemoryBlobs()
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))

    async def quick() -> ToolResult:
        return RESULT

    assert await _attempt(1).run(in_flight.run, "key", quick, what="a call") == RESULT
    await asyncio.sleep(0)
    assert blobs.blobs == {}


@pytest.mark.parametrize(
    "result",
    [
        RESULT,
        AssistantTurn(text="done", usage=Usage(input_tokens=3, output_tokens=5, cost_usd=0.25), model="m"),
    ],
)
async def test_a_result_another_worker_recorded_answers_a_later_attempt_exactly(result: ToolResult | AssistantTurn):
    blobs = MemoryBlobs()
    environment = _attempt(2)
    elsewhere = CallRecords(type(result), lambda: blobs)
    await elsewhere.write(_key(environment), elsewhere.returned(result, DATA_CONVERTER.payload_converter))
    in_flight = InFlight(CallRecords(type(result), lambda: blobs))
    assert await environment.run(in_flight.run, "key", _not_run, what="a call") == result


async def test_a_failure_for_good_another_worker_recorded_is_raised_again():
    blobs = MemoryBlobs()
    environment = _attempt(2)
    elsewhere = CallRecords(ToolResult, lambda: blobs)
    failure = ApplicationError("refused", {"spent": 3}, type="BudgetOver", non_retryable=True)
    await elsewhere.write(_key(environment), elsewhere.ended(failure, DATA_CONVERTER.payload_converter))
    in_flight = InFlight(CallRecords(ToolResult, lambda: blobs))
    with pytest.raises(ApplicationError) as raised:
        await environment.run(in_flight.run, "key", _not_run, what="a call")
    assert (raised.value.message, raised.value.type, raised.value.non_retryable) == ("refused", "BudgetOver", True)
    assert list(raised.value.details) == [{"spent": 3}]


async def test_a_stale_lease_runs_the_call_at_once():
    blobs = MemoryBlobs()
    environment = _attempt(2)
    elsewhere = CallRecords(ToolResult, lambda: blobs)
    stale = CallRecord(holder=elsewhere.holder, renewed_at=time.time() - 60, renewals=9)
    await elsewhere.write(_key(environment), stale)
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))

    async def run_again() -> ToolResult:
        return RESULT

    assert await environment.run(in_flight.run, "key", run_again, what="a call") == RESULT


async def test_a_failed_record_without_its_failure_is_ignored_and_the_call_runs(caplog):
    blobs = MemoryBlobs()
    environment = _attempt(2)
    elsewhere = CallRecords(ToolResult, lambda: blobs)
    torn = CallRecord.model_construct(holder=elsewhere.holder, renewed_at=time.time(), renewals=0, state="failed")
    await elsewhere.write(_key(environment), torn)  # model_construct skips the check a reader makes
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))

    async def run_again() -> ToolResult:
        return RESULT

    assert await environment.run(in_flight.run, "key", run_again, what="a call") == RESULT
    assert "cannot be read, so it is ignored" in caplog.text


async def test_a_fresh_lease_is_waited_on_until_its_result_is_recorded():
    blobs = MemoryBlobs()
    environment = _attempt(2)
    elsewhere = CallRecords(ToolResult, lambda: blobs)
    await elsewhere.write(_key(environment), elsewhere.running(1))
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))

    async def finish_elsewhere() -> None:
        await asyncio.sleep(0.3)
        await elsewhere.write(_key(environment), elsewhere.returned(RESULT, DATA_CONVERTER.payload_converter))

    finishing = asyncio.create_task(finish_elsewhere())
    assert await environment.run(in_flight.run, "key", _not_run, what="a call") == RESULT
    await finishing


async def test_an_outcome_write_failing_unexpectedly_is_logged(caplog):
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, MemoryBlobs))

    async def failing_write() -> None:
        raise RuntimeError("storage driver bug")

    in_flight._spawn(failing_write())
    for _ in range(3):
        await asyncio.sleep(0)
    assert "recording the outcome of a call failed (RuntimeError: storage driver bug)" in caplog.text


class _BrokenStorage:
    """Storage that answers every read and write with an error, as an unreachable bucket does."""

    async def put(self, key: str, data: bytes) -> None:
        raise OSError("the bucket is unreachable")

    async def get(self, key: str) -> bytes | None:
        raise OSError("the bucket is unreachable")


async def test_a_later_attempt_that_cannot_read_storage_runs_the_call(caplog):
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, _BrokenStorage))

    async def run_again() -> ToolResult:
        return RESULT

    assert await _attempt(2).run(in_flight.run, "key", run_again, what="a call") == RESULT
    assert "could not read the record of a call (OSError: the bucket is unreachable)" in caplog.text


async def test_a_long_call_that_cannot_write_its_lease_still_returns_its_result(monkeypatch, caplog):
    monkeypatch.setattr(call_records, "LEASE_RENEW_SECONDS", 0.01)
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, _BrokenStorage))

    async def long() -> ToolResult:
        await asyncio.sleep(0.1)
        return RESULT

    assert await _attempt(1).run(in_flight.run, "key", long, what="a call") == RESULT
    assert "could not write the lease of a running call to storage (OSError: the bucket is unreachable)" in caplog.text


class _SlowToTakeOutcomes(MemoryBlobs):
    """Storage that takes a while to write a call's outcome (a lease renewal goes through at once); with `hang`,
    forever."""

    def __init__(self, hang: bool = False) -> None:
        super().__init__()
        self.hang = hang

    async def put(self, key: str, data: bytes) -> None:
        if b'"state"' in data:  # an outcome: a renewal's state is the default, left out
            await asyncio.sleep(3600 if self.hang else 0.3)
        await super().put(key, data)


async def test_draining_waits_for_the_outcome_of_a_call_still_being_written(monkeypatch):
    monkeypatch.setattr(call_records, "LEASE_RENEW_SECONDS", 0.01)
    blobs = _SlowToTakeOutcomes()
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))
    environment = _attempt(1)

    async def long() -> ToolResult:
        await asyncio.sleep(0.1)
        return RESULT

    assert await environment.run(in_flight.run, "key", long, what="a call") == RESULT
    await in_flight.drain()
    record = CallRecord.model_validate_json(blobs.blobs[_key(environment).object_key])
    assert record.state == "returned"


async def test_draining_gives_up_on_an_outcome_storage_does_not_take_and_says_so(monkeypatch, caplog):
    monkeypatch.setattr(call_records, "LEASE_RENEW_SECONDS", 0.01)
    monkeypatch.setattr(in_flight_module, "DRAIN_SECONDS", 0.05)
    blobs = _SlowToTakeOutcomes(hang=True)
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))

    async def long() -> ToolResult:
        await asyncio.sleep(0.1)
        return RESULT

    assert await _attempt(1).run(in_flight.run, "key", long, what="a call") == RESULT
    await in_flight.drain()
    assert "the worker stops without recording the outcome of 1 call(s)" in caplog.text


async def test_a_later_attempt_on_the_same_worker_waits_for_the_outcome_still_being_written_and_does_not_run_again(
    monkeypatch,
):
    """The server gave up on attempt 1 (an outage) while its call ran on; the call then failed for good, and its
    outcome is still being written when attempt 2 comes to this worker: the record still holds this worker's own
    running lease, which a later attempt takes for a call no longer running here, and ran the call again."""
    monkeypatch.setattr(call_records, "LEASE_RENEW_SECONDS", 0.01)
    blobs = _SlowToTakeOutcomes()
    in_flight: InFlight[ToolResult] = InFlight(CallRecords(ToolResult, lambda: blobs))

    async def refused() -> ToolResult:
        await asyncio.sleep(0.1)
        raise ApplicationError("refused", type="Refused", non_retryable=True)

    with pytest.raises(ApplicationError):
        await _attempt(1).run(in_flight.run, "key", refused, what="a call")
    with pytest.raises(ApplicationError) as again:
        await _attempt(2).run(in_flight.run, "key", _not_run, what="a call")
    assert (again.value.message, again.value.type) == ("refused", "Refused")
