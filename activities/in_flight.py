"""A call still running when the server gives up on its attempt is joined, not started again, on any worker.

Heartbeat timeouts are short (a few seconds), so a dead worker's call is soon run elsewhere. A server outage
longer than that makes the server time out the attempt of a call a worker is still running (its heartbeats could
not reach the server): once the server is back it offers a new attempt, and the SDK cancels the old one, saying it
timed out or is gone. The call keeps running in a task of its own. A new attempt taken by the same worker waits
for that task instead of running the call a second time. One taken by another worker reads the call's record in
shared storage (`activities/call_records.py`): the call's result, once it has one, is returned; while its lease is
renewed the attempt waits for it, heartbeating; a stale lease (the worker was killed) or no record at all, and the
call runs at once. Only a real cancellation (the run's, or the worker shutting down) stops the call.

A call's outcome is written in the background, so its result goes back at once. A worker that stops waits for those
writes (`drain`, at the end of its graceful shutdown): a write dropped with the process would leave the lease saying
"running", so the next attempt, on another worker, would wait for it to go stale instead of running at once, or run
again a call whose result was lost with its completion.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

from temporalio import activity
from temporalio.converter import PayloadConverter

from stalwart.activities.call_records import (
    RECORD_POLL_SECONDS,
    CallKey,
    CallRecord,
    CallRecords,
    Lease,
    LeaseWatch,
)
from stalwart.activities.heartbeats import heartbeating

T = TypeVar("T")

_log = logging.getLogger(__name__)

DRAIN_SECONDS = 5.0
"""How long a stopping worker waits for the outcome writes still pending; a write that takes longer (storage
unreachable) is given up, logged: its lease goes stale as if the worker had been killed."""
OUTCOME_WAIT_SECONDS = 1.0
"""How long a later attempt of a call that ended here waits for its outcome's write, sending no heartbeat (a write
takes milliseconds); past it, the attempt runs the call, as it did before records existed."""
JOINED_HEARTBEAT_SECONDS = 1.0
"""How often an attempt that joined a running call heartbeats while it waits (the call's own beats go to the
attempt that started it)."""


class InFlight(Generic[T]):
    """The calls running on this worker, by key (the run and activity id: the same for every attempt), and, with
    `records`, what other workers see of the long ones."""

    def __init__(self, records: CallRecords[T] | None = None) -> None:
        self._running: dict[Hashable, asyncio.Task[T]] = {}
        self._leases: dict[Hashable, Lease] = {}
        self._records = records
        self._writing: set[asyncio.Task[None]] = set()
        """Outcomes being written after their call returned: the result goes back at once, not after a write."""
        self._outcomes: dict[Hashable, asyncio.Task[None]] = {}
        """The same writes by call: a later attempt of the call here reads its record once the write has landed."""

    def __contains__(self, key: Hashable) -> bool:
        return key in self._running

    async def run(self, key: Hashable, work: Callable[[], Coroutine[Any, Any, T]], *, what: str) -> T:
        """`work()`'s result; an attempt whose call is already running here, or recorded by another worker, waits
        for it instead."""
        task = self._running.get(key)
        if task is not None:
            activity.logger.info(
                "%s is still running on this worker from an attempt the server gave up on; attempt %d waits for it "
                "instead of running it again",
                what,
                activity.info().attempt,
            )
            async with heartbeating(JOINED_HEARTBEAT_SECONDS, activity.heartbeat):
                return await self._wait(key, task)
        info = activity.info()
        records = self._records
        call = CallKey.of(info) if records is not None else None
        if records is None or call is None:
            task = asyncio.ensure_future(work())
        else:
            converter = activity.payload_converter()
            if info.attempt > 1:
                if (writing := self._outcomes.get(key)) is not None:  # else the record says this worker runs it
                    await asyncio.wait({writing}, timeout=OUTCOME_WAIT_SECONDS)
                record = await self._recorded_elsewhere(records, call, what)
                if record is not None:
                    return self._handed_over(records, record, converter, what)
            task = asyncio.ensure_future(self._leased(key, call, work, records, converter))
        self._running[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))
        return await self._wait(key, task)

    async def _leased(
        self,
        key: Hashable,
        call: CallKey,
        work: Callable[[], Coroutine[Any, Any, T]],
        records: CallRecords[T],
        converter: PayloadConverter,
    ) -> T:
        """`work()`, under a lease once it runs long; its outcome recorded if the lease was written (or the attempt
        given up), in the background."""
        timeout = activity.info().start_to_close_timeout
        lease = records.lease(call, for_seconds=timeout.total_seconds() if timeout else None)
        self._leases[key] = lease
        try:
            result = await work()
        except BaseException as err:
            self._settle(key, lease, functools.partial(records.ended, err, converter))
            raise
        self._settle(key, lease, functools.partial(records.returned, result, converter))
        return result

    def _settle(self, key: Hashable, lease: Lease, outcome: Callable[[], CallRecord]) -> None:
        """Record the call's outcome if its lease was written or its attempt given up: in the background, so the
        result goes back at once. A quick call has only a timer to cancel."""
        if self._leases.get(key) is lease:
            del self._leases[key]
        if lease.cancel_if_idle() and not lease.given_up:
            return
        writing = self._spawn(self._record_outcome(lease, outcome))
        self._outcomes[key] = writing
        writing.add_done_callback(functools.partial(self._outcome_written, key))

    def _outcome_written(self, key: Hashable, writing: asyncio.Task[None]) -> None:
        if self._outcomes.get(key) is writing:  # not a later call's write under the same key
            del self._outcomes[key]

    @staticmethod
    async def _record_outcome(lease: Lease, outcome: Callable[[], CallRecord]) -> None:
        await lease.stop()  # a renewal being written lands first, and says whether the outcome is needed
        if not lease.needs_outcome:
            return
        try:
            record = outcome()
        except Exception as err:  # a result the converter cannot encode: its completion fails alike
            _log.warning("could not record the outcome of a call: %s: %s", type(err).__name__, err)
            return
        await lease.end(record)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        writing = asyncio.ensure_future(coroutine)
        self._writing.add(writing)  # referenced until it ends: the loop keeps only a weak reference to a task
        writing.add_done_callback(self._written)
        return writing

    def _written(self, writing: asyncio.Task[None]) -> None:
        """Forget a finished outcome write; an error it did not expect is logged, not left for the garbage
        collector's "exception was never retrieved"."""
        self._writing.discard(writing)
        if not writing.cancelled() and (err := writing.exception()) is not None:
            _log.warning(
                "recording the outcome of a call failed (%s: %s): another worker taking its next attempt would run "
                "it again; check that STALWART_STORAGE is reachable and writable",
                type(err).__name__,
                err,
                exc_info=err,
            )

    async def drain(self) -> None:
        """Wait for the outcome writes still pending, at most DRAIN_SECONDS: the worker is stopping, and the process
        may end as soon as it has."""
        if not self._writing:
            return
        _done, pending = await asyncio.wait(set(self._writing), timeout=DRAIN_SECONDS)
        if pending:
            _log.warning(
                "the worker stops without recording the outcome of %d call(s): storage did not take the write within "
                "%g s. Another worker taking their next attempts waits for their leases to go stale, then runs "
                "them; check that STALWART_STORAGE is reachable and writable",
                len(pending),
                DRAIN_SECONDS,
            )
            for writing in pending:
                writing.cancel()
            await asyncio.wait(pending)

    async def _recorded_elsewhere(self, records: CallRecords[T], call: CallKey, what: str) -> CallRecord | None:
        """The outcome another worker recorded for this call, waited for while its lease is renewed; None: this
        attempt runs the call (no record, a stale lease, an ending without a result, storage unreadable)."""
        attempt = activity.info().attempt
        try:
            record = await records.read(call)
        except Exception as err:
            activity.logger.warning(
                "could not read the record of %s (%s: %s); attempt %d runs it, though another worker may be running "
                "it: check that STALWART_STORAGE is reachable and readable",
                what,
                type(err).__name__,
                err,
                attempt,
            )
            return None
        if record is None or record.holder == records.holder and record.state == "running":
            return None  # never recorded, or this worker's own lease on a call no longer running here
        watch = LeaseWatch()
        if record.state == "running":
            if not watch.fresh(record):
                activity.logger.info(
                    "%s was running on worker %s, whose lease was last renewed %.1f s ago: it is gone, and attempt "
                    "%d runs the call",
                    what,
                    record.holder,
                    record.age(),
                    attempt,
                )
                return None
            activity.logger.info(
                "%s is still running on worker %s (its lease renewed %.1f s ago); attempt %d waits for its result "
                "instead of running it again",
                what,
                record.holder,
                record.age(),
                attempt,
            )
            async with heartbeating(JOINED_HEARTBEAT_SECONDS, activity.heartbeat):
                while record.state == "running":
                    await asyncio.sleep(RECORD_POLL_SECONDS)
                    with contextlib.suppress(Exception):  # unreadable for now: the lease ages meanwhile
                        record = await records.read(call) or record
                    if record.state == "running" and not watch.fresh(record):
                        activity.logger.info(
                            "%s: worker %s stopped renewing its lease; attempt %d runs the call",
                            what,
                            record.holder,
                            attempt,
                        )
                        return None
        if record.state == "ended":
            return None  # it ended without a result (a retryable failure, a cancellation): this is its retry
        return record

    @staticmethod
    def _handed_over(records: CallRecords[T], record: CallRecord, converter: PayloadConverter, what: str) -> T:
        """The result (or the failure for good) that worker `record.holder` recorded for this call."""
        activity.logger.info(
            "%s finished on worker %s, but its completion did not reach the server; answering attempt %d with its "
            "%s instead of running it again",
            what,
            record.holder,
            activity.info().attempt,
            "result" if record.state == "returned" else "failure",
        )
        if record.state == "failed":
            raise records.failure(record, converter)
        return records.result(record, converter)

    def _forget(self, key: Hashable, done: asyncio.Task[T]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved, so a call nobody waits for any more logs no "never retrieved"

    async def _wait(self, key: Hashable, task: asyncio.Task[T]) -> T:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not _attempt_given_up():
                task.cancel()  # the run's cancellation, or the worker's shutdown: the call stops, and is waited for
                with contextlib.suppress(BaseException):
                    await task
            else:
                lease = self._leases.get(key)
                if lease is not None:
                    lease.given_up = True
            raise


def _attempt_given_up() -> bool:
    """Whether this attempt is cancelled because the server timed it out or no longer knows it (a new attempt may
    come, here or elsewhere), rather than because the run cancelled it or the worker is shutting down."""
    details = activity.cancellation_details()
    return details is not None and (details.timed_out or details.not_found) and not details.cancel_requested
