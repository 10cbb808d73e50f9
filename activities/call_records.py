"""What other workers see of a long model or tool call: a lease while it runs, then its outcome.

`InFlight` joins a call still running on the worker that started it. A new attempt taken by another worker (the
server timed the old one out because its heartbeats could not reach it during an outage, or the first worker's
completion was lost) knows nothing of that call, and would run it again. So a call that outlives
LEASE_RENEW_SECONDS keeps a small record in the storage workers already share for transcripts: a lease, renewed
every LEASE_RENEW_SECONDS while the call runs (who runs it, when it last renewed), then, when the call ends, its
outcome (its result, its failure if it failed for good, or that it ended without one). A later attempt on any
worker reads it: a result is returned without running the call, a fresh lease is waited on, and a stale lease (a
killed worker's) or no record means the call runs at once. A call quicker than LEASE_RENEW_SECONDS writes nothing
and a first attempt reads nothing, so a step costs what it did.

Where: `transcripts/calls/<sha256 of namespace, workflow id, run id and activity id>` in the worker's storage
(`STALWART_STORAGE`: a folder, which workers of one machine share, or an S3 bucket, which any workers can share),
sealed like transcripts when `STALWART_ENCRYPTION_KEYS` is set. One object of a few hundred bytes (plus the result)
per long call. Only a later attempt of the same call reads it, and none comes after the activity's
schedule-to-close timeout (30 minutes for model calls, a tool's `timeout_seconds`): a record can be deleted once its
run has closed, or by age (an S3 lifecycle rule on `transcripts/calls/`).

Leases are judged by wall time and, while an attempt waits, by whether they still change: clocks of workers on
different machines should agree within a second or two (NTP), else a live call may be judged stale and run twice,
as it was before records existed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError, model_validator
from temporalio import activity
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from stalwart.activities.secrets import redact_value, redacted_error
from stalwart.activities.storage.config import ObjectStore
from stalwart.activities.transcripts import BlobStore

T = TypeVar("T")

LEASE_RENEW_SECONDS = 1.5
"""How often a running call renews its lease, from this long after it started: a quicker call writes nothing."""
LEASE_STALE_SECONDS = 4.0
"""A lease not renewed for this long is a dead (or stalled) worker's: a new attempt runs the call at once. A
killed worker's attempt is retried at least heartbeat timeout (5 s) + first retry interval (1 s) - heartbeat
interval (1 s for model calls, 2 s for tools) after its last renewal, so its lease is always stale by then and the
retry waits for nothing; a live worker renews well within it."""
RECORD_POLL_SECONDS = 0.5
"""How often an attempt waiting on another worker's call reads its record."""
AREA = "calls"

_log = logging.getLogger(__name__)

State = Literal["running", "returned", "failed", "ended"]


@dataclass(frozen=True)
class CallKey:
    """What every attempt of one call shares: its workflow's namespace, workflow id and run id, and its activity id."""

    namespace: str
    workflow_id: str
    run_id: str
    activity_id: str

    @classmethod
    def of(cls, info: activity.Info) -> CallKey | None:
        """The key of the running activity; None for one no workflow started or a local activity (its attempts
        all run on the worker of the workflow's task, which `InFlight` covers)."""
        if info.is_local or not info.workflow_id or not info.workflow_run_id:
            return None
        return cls(info.namespace, info.workflow_id, info.workflow_run_id, info.activity_id)

    @property
    def object_key(self) -> str:
        """Hashed: workflow ids may hold any character, and the record's name tells nothing about the run."""
        parts = json.dumps([self.namespace, self.workflow_id, self.run_id, self.activity_id])
        return f"{AREA}/{hashlib.sha256(parts.encode()).hexdigest()}"


class RecordedFailure(BaseModel):
    """A failure for good (a non-retryable `ApplicationError`), as the attempt that meets it again raises it."""

    message: str
    type: str | None = None
    details: str = ""
    """The failure's details as serialized Payloads, base64: they come back exactly as the converter gave them."""
    category: int = int(ApplicationErrorCategory.UNSPECIFIED)


class CallRecord(BaseModel):
    """One call's record: a lease while it runs (`state` running), then its outcome."""

    holder: str
    """The worker that runs or ran the call (`CallRecords.holder`)."""
    renewed_at: float
    """Wall time (Unix seconds) the holder last wrote the record."""
    renewals: int = 0
    state: State = "running"
    result: str = ""
    """For `returned`: the result as a serialized Payload, base64, so it round-trips exactly."""
    failure: RecordedFailure | None = None

    @model_validator(mode="after")
    def _failed_has_its_failure(self) -> CallRecord:
        """A `failed` record without its failure cannot answer a retry: reading it fails, and the attempt runs."""
        if self.state == "failed" and self.failure is None:
            raise ValueError("a failed call's record holds no failure")
        return self

    def age(self) -> float:
        return max(0.0, time.time() - self.renewed_at)


class CallRecords(Generic[T]):
    """The records of the calls of one kind (their results are `result_type`), in the worker's storage.

    `store` defaults to the worker's object store (`STALWART_STORAGE`, sealed with `STALWART_ENCRYPTION_KEYS`),
    opened on first use, so a worker whose calls are all quick never opens it.
    """

    def __init__(self, result_type: type[T], store: Callable[[], BlobStore] | None = None) -> None:
        self._result_type = result_type
        self._open_store = store if store is not None else ObjectStore.from_config
        self._store: BlobStore | None = None
        self.holder = f"{os.getpid()}@{socket.gethostname()}/{uuid.uuid4().hex[:8]}"
        """This worker's calls, as a record names them: process and host, and a token of its own, since two workers
        may share a process."""

    @property
    def store(self) -> BlobStore:
        if self._store is None:
            self._store = self._open_store()
        return self._store

    async def read(self, key: CallKey) -> CallRecord | None:
        """The call's record, or None if it has none or one this version cannot read (logged). Storage errors
        are raised: the caller knows whether to run the call or keep waiting."""
        data = await self.store.get(key.object_key)
        if data is None:
            return None
        try:
            return CallRecord.model_validate_json(data)
        except ValidationError as err:
            _log.warning("the call record %s cannot be read, so it is ignored: %s", key.object_key, err)
            return None

    def lease(self, key: CallKey, *, for_seconds: float | None = None) -> Lease:
        """A lease on `key` for a call starting now; it writes nothing until the call has run LEASE_RENEW_SECONDS,
        and is no longer renewed after `for_seconds` (the attempt's start-to-close timeout)."""
        return Lease(self, key, for_seconds)

    async def write(self, key: CallKey, record: CallRecord) -> None:
        await self.store.put(key.object_key, record.model_dump_json(exclude_defaults=True).encode())

    def returned(self, result: T, converter: PayloadConverter) -> CallRecord:
        """The record of a call that returned `result` (secrets redacted, as its completion would carry it)."""
        payload = converter.to_payload(redact_value(result))
        encoded = base64.b64encode(payload.SerializeToString()).decode()
        return self._record(state="returned", result=encoded)

    def ended(self, error: BaseException, converter: PayloadConverter) -> CallRecord:
        """The record of a call that raised `error`: a failure for good is kept, to be raised again; anything else
        (a retryable failure, a cancellation) leaves the next attempt to run the call."""
        if not (isinstance(error, ApplicationError) and error.non_retryable):
            return self._record(state="ended")
        cleaned = redacted_error(error)
        failure = cleaned if isinstance(cleaned, ApplicationError) else error
        details = Payloads(payloads=converter.to_payloads(list(failure.details)))
        recorded = RecordedFailure(
            message=failure.message,
            type=failure.type,
            details=base64.b64encode(details.SerializeToString()).decode(),
            category=int(failure.category),
        )
        return self._record(state="failed", failure=recorded)

    def result(self, record: CallRecord, converter: PayloadConverter) -> T:
        payload = Payload()
        payload.ParseFromString(base64.b64decode(record.result))
        value: T = converter.from_payload(payload, self._result_type)
        return value

    @staticmethod
    def failure(record: CallRecord, converter: PayloadConverter) -> ApplicationError:
        failure = record.failure
        if failure is None:  # `CallRecord` refuses a failed record without one; any other state has no failure
            raise ValueError(f"the record of a call that {record.state} holds no failure")
        payloads = Payloads()
        payloads.ParseFromString(base64.b64decode(failure.details))
        return ApplicationError(
            failure.message,
            *converter.from_payloads(list(payloads.payloads)),
            type=failure.type,
            non_retryable=True,
            category=ApplicationErrorCategory(failure.category),
        )

    def running(self, renewals: int) -> CallRecord:
        """The lease of a call this worker runs, renewed for the `renewals`th time now."""
        return self._record(renewals=renewals)

    def _record(self, **fields: Any) -> CallRecord:
        return CallRecord(holder=self.holder, renewed_at=time.time(), **fields)


class Lease:
    """Renews one running call's record every LEASE_RENEW_SECONDS, from LEASE_RENEW_SECONDS after it started.

    Made without a task: a quick call costs a timer, cancelled when it ends.
    """

    def __init__(self, records: CallRecords[Any], key: CallKey, for_seconds: float | None = None) -> None:
        self._records = records
        self._key = key
        self._until = None if for_seconds is None else time.monotonic() + for_seconds
        """A call still running when the server would have timed out its attempt anyway (a hung call) stops
        holding the lease: the next attempt runs the call instead of waiting for it until its own timeout."""
        self._stop = asyncio.Event()
        self._renewing: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(LEASE_RENEW_SECONDS, self._start)
        self.written = False
        """Whether a renewal reached storage: then the call's outcome must be written too, or the lease would tell
        the next attempt to wait for it."""
        self.given_up = False
        """Whether the server gave up on the attempt that started the call: its next attempt may go to any worker,
        which learns the outcome only from the record."""

    @property
    def needs_outcome(self) -> bool:
        return self.written or self.given_up

    def cancel_if_idle(self) -> bool:
        """Drop a lease that never started renewing (a quick call): True if so, and nothing is left to wait for."""
        if self._renewing is not None:
            return False
        self._timer.cancel()
        return True

    def _start(self) -> None:
        self._renewing = asyncio.create_task(self._renew())

    async def _renew(self) -> None:
        renewals, warned = 0, False
        while not self._stop.is_set() and (self._until is None or time.monotonic() < self._until):
            renewals += 1
            try:
                await self._records.write(self._key, self._records.running(renewals))
                self.written = True
            except Exception as err:
                if not warned:
                    warned = True
                    _log.warning(
                        "could not write the lease of a running call to storage (%s: %s): another worker taking "
                        "its next attempt would run it again; check that STALWART_STORAGE is reachable and writable",
                        type(err).__name__,
                        err,
                    )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), LEASE_RENEW_SECONDS)

    async def stop(self) -> None:
        """Stop renewing; returns once no renewal is being written, so the outcome written next is the last word."""
        self._timer.cancel()
        self._stop.set()
        if self._renewing is not None:
            await self._renewing

    async def end(self, outcome: CallRecord) -> None:
        """Stop renewing and write the call's outcome. Failures are logged: the lease then goes stale, and the next
        attempt runs the call, as before records existed."""
        await self.stop()
        try:
            await self._records.write(self._key, outcome)
        except Exception as err:
            _log.warning(
                "could not write the outcome of a call to storage (%s: %s): another worker taking its next attempt "
                "would run it again; check that STALWART_STORAGE is reachable and writable",
                type(err).__name__,
                err,
            )


class LeaseWatch:
    """Whether another worker's lease is still renewed, as an attempt waiting on it sees it.

    Judged by this worker's clock from the moment a renewal is first seen, less the age its wall time says (never
    more than LEASE_STALE_SECONDS): a holder whose clock runs ahead is stale LEASE_STALE_SECONDS after its last
    renewal seen, not never.
    """

    def __init__(self) -> None:
        self._seen: tuple[str, int] | None = None
        self._fresh_until = 0.0

    def fresh(self, record: CallRecord) -> bool:
        now = time.monotonic()
        seen = (record.holder, record.renewals)
        if seen != self._seen:
            self._seen = seen
            self._fresh_until = now + LEASE_STALE_SECONDS - min(record.age(), LEASE_STALE_SECONDS)
        return now < self._fresh_until
