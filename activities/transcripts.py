"""The conversation of a run chain, stored once, in appended segments.

The model activity appends what the workflow recorded since its last call and reads the
rest from here, so history never carries the whole conversation (it would grow with the
square of the run's length) and the activity needs nothing but its input. Segments are
chained by SHA-256, so a `TranscriptRef` in history pins exactly what a step read.

A large tool result is stored on its own by the tool activity that produced it (`keep_result`),
named by its hash; the model call's input and the stored conversation refer to it, and reading
fills it in. So each result is kept once, in history and in storage.

A worker keeps the conversations it served last in memory: the next step of a run usually
lands on the same worker, which then reads only the new segment.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import TypeAdapter

from stalwart.contracts.activities import AgentContext
from stalwart.contracts.errors import InfrastructureError
from stalwart.contracts.messages import Message, StoredContent, ToolResult, TranscriptRef
from stalwart.contracts.run import ArchivedStep, StepArchive, StepRecord

_MESSAGES = TypeAdapter(list[Message])
_STEPS = TypeAdapter(list[StepRecord])
STORE_RESULTS_ABOVE_CHARS = 1024
"""A tool result longer than this is stored on its own and referred to; a shorter one costs less inline."""
CACHED_RESULT_BYTES = 64 * 1024 * 1024
"""How many bytes of stored results a worker keeps in memory: the model call after a tool call usually reads the
result that tool call stored on this worker. A bound in bytes, since one result may be many megabytes."""


def goes_inline(result: ToolResult) -> bool:
    """Whether a tool result goes to the model call as it is, not stored (`TranscriptStore.keep_result`): an error,
    or no longer than STORE_RESULTS_ABOVE_CHARS."""
    return result.is_error or len(result.text) <= STORE_RESULTS_ABOVE_CHARS


class BlobStore(Protocol):
    """Where transcripts are kept: the worker's external storage (a local folder or an S3 bucket)."""

    async def put(self, key: str, data: bytes) -> None: ...

    async def get(self, key: str) -> bytes | None: ...


class TranscriptError(InfrastructureError):
    """The stored conversation is missing or differs from what history says; retrying cannot help."""


@dataclass
class _Cached:
    ref: TranscriptRef
    messages: list[Message]


def chained(previous: str, segment: bytes) -> str:
    """The hash of a transcript after `segment`: each segment's hash folded into the one before it."""
    return hashlib.sha256(f"{previous}:{hashlib.sha256(segment).hexdigest()}".encode()).hexdigest()


class TranscriptStore:
    """Reads and appends the conversations of run chains."""

    def __init__(self, blobs: BlobStore, *, cached_chains: int = 512) -> None:
        self._blobs = blobs
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cached_chains = cached_chains
        self._contexts: OrderedDict[str, AgentContext] = OrderedDict()  # by hash: an agent is read once
        self._results: OrderedDict[str, bytes] = OrderedDict()  # stored results this worker wrote or read last
        self._results_bytes = 0

    def _missing(self, what: str) -> TranscriptError:
        """`what` is not where this process looks: say where that is, since the usual cause is another place."""
        return TranscriptError(
            f"{what} not in storage{self._where()}: every worker and client of a run must share one STALWART_STORAGE "
            "(a shared folder or an S3 bucket); set it here to the workers' location"
        )

    def _where(self) -> str:
        location = getattr(self._blobs, "location", "")  # an ObjectStore knows it; a test's blobs need not
        return f" ({location})" if location else ""

    async def read(self, ref: TranscriptRef) -> list[Message]:
        """The messages `ref` names, checked against its hash."""
        cached = self._cache.get(ref.chain_id)
        if cached is not None and cached.ref.segments <= ref.segments:
            try:
                return await self._read_from(ref, list(cached.messages), cached.ref.sha256, cached.ref.segments)
            except TranscriptError:
                pass  # the cached prefix is of another attempt's branch: read it all
        return await self._read_from(ref, [], "", 0)

    async def _read_from(self, ref: TranscriptRef, messages: list[Message], digest: str, start: int) -> list[Message]:
        for index in range(start, ref.segments):
            data = await self._blobs.get(self._segment_key(ref.chain_id, index))
            if data is None:
                raise self._missing(f"segment {index} of the conversation of run chain {ref.chain_id} is")
            messages.extend(await self.filled(ref.chain_id, _MESSAGES.validate_json(data)))
            digest = chained(digest, data)
        if digest != ref.sha256 or len(messages) != ref.messages:
            raise TranscriptError(
                f"the stored conversation of run chain {ref.chain_id} does not match its history "
                f"({len(messages)} messages stored, {ref.messages} recorded): was storage changed by hand?"
            )
        self._remember(ref, messages)
        return messages

    async def append(self, ref: TranscriptRef, new: list[Message]) -> tuple[TranscriptRef, list[Message]]:
        """Store `new` after the conversation `ref` names; the new ref and the whole conversation.

        Writing segment N again (a retried attempt) writes the same bytes, so appending is idempotent.
        Stored tool results are kept as the references `new` has (`ToolResult.by_reference`).
        """
        messages = await self.read(ref)
        if not new:
            return ref, messages
        data = _MESSAGES.dump_json([_by_reference(message) for message in new])
        new = await self.filled(ref.chain_id, new)
        await self._blobs.put(self._segment_key(ref.chain_id, ref.segments), data)
        after = ref.model_copy(  # the summary, if any, stays with the conversation
            update={
                "segments": ref.segments + 1,
                "messages": ref.messages + len(new),
                "sha256": chained(ref.sha256, data),
            }
        )
        messages = [*messages, *new]
        self._remember(after, messages)
        return after, messages

    async def keep_result(self, chain_id: str, result: ToolResult) -> ToolResult:
        """Store a large result's content once, by its hash; the result, whole, naming where it is kept."""
        if result.stored is not None or goes_inline(result):
            return result
        data = result.model_dump_json(include={"content", "data"}).encode()
        digest = hashlib.sha256(data).hexdigest()
        key = self._result_key(chain_id, digest)
        await self._blobs.put(key, data)
        self._remember_result(key, data)
        return result.model_copy(update={"stored": StoredContent(sha256=digest, chars=len(result.text))})

    async def filled(self, chain_id: str, messages: list[Message]) -> list[Message]:
        """`messages` with the content of every stored tool result they refer to read back from storage."""
        out = []
        for message in messages:
            if any(_unfilled(result) for result in message.tool_results):
                results = [
                    await self._fill(chain_id, result) if _unfilled(result) else result
                    for result in message.tool_results
                ]
                message = message.model_copy(update={"tool_results": results})
            out.append(message)
        return out

    async def _fill(self, chain_id: str, result: ToolResult) -> ToolResult:
        assert result.stored is not None
        key = self._result_key(chain_id, result.stored.sha256)
        data = self._results.get(key)
        if data is None:
            data = await self._blobs.get(key)
            if data is None or hashlib.sha256(data).hexdigest() != result.stored.sha256:
                kept = f"the result of tool call {result.name} ({result.call_id}) kept as {key}"
                if data is None:
                    raise self._missing(f"{kept} is")
                raise TranscriptError(
                    f"{kept} is not what was stored{self._where()}: was storage changed by hand? Every worker and "
                    "client of a run must share one STALWART_STORAGE"
                )
            self._remember_result(key, data)
        kept = json.loads(data)
        return result.model_copy(update={"content": kept.get("content", ""), "data": kept.get("data")})

    def _remember_result(self, key: str, data: bytes) -> None:
        if len(data) > CACHED_RESULT_BYTES:
            return
        previous = self._results.pop(key, None)
        self._results_bytes += len(data) - (len(previous) if previous is not None else 0)
        self._results[key] = data
        while self._results_bytes > CACHED_RESULT_BYTES:
            _, dropped = self._results.popitem(last=False)
            self._results_bytes -= len(dropped)

    async def save_context(self, chain_id: str, context: AgentContext) -> str:
        """Store the agent and its tools once per chain and content; later calls name them by hash."""
        data = context.model_dump_json().encode()
        digest = hashlib.sha256(data).hexdigest()
        await self._blobs.put(self._context_key(chain_id, digest), data)
        self._remember_context(digest, context)
        return digest

    async def load_context(self, chain_id: str, digest: str) -> AgentContext:
        known = self._contexts.get(digest)
        if known is not None:
            self._contexts.move_to_end(digest)
            return known
        data = await self._blobs.get(self._context_key(chain_id, digest))
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            raise self._missing(f"the agent and tools of run chain {chain_id} (sha256 {digest[:12]}) are")
        context = AgentContext.model_validate_json(data)
        self._remember_context(digest, context)
        return context

    def _remember_context(self, digest: str, context: AgentContext) -> None:
        self._contexts[digest] = context
        self._contexts.move_to_end(digest)
        while len(self._contexts) > self._cached_chains:
            self._contexts.popitem(last=False)

    async def save_steps(self, chain_id: str, index: int, steps: Sequence[StepRecord]) -> StepArchive:
        """Store the step log of one run of a chain (written again unchanged on a retry)."""
        key = f"{chain_id}/steps-{index:05d}.json"
        await self._blobs.put(key, _STEPS.dump_json(list(steps), exclude_none=True))  # a None is its field's default
        return StepArchive(key=key, count=len(steps))

    async def steps_filled(
        self, ref: TranscriptRef | None, steps: list[ArchivedStep], positions: dict[int, int]
    ) -> list[ArchivedStep]:
        """`steps` with the text of each step `positions` names read from its message in the conversation `ref`.

        A user step's text is its message's, an assistant step's its reply's: the workflow names only those, and only
        once they are stored, so a step whose message is not there, or is of another role, means storage and history
        differ."""
        if ref is None:
            raise TranscriptError("the step archive's input names texts in the conversation but not the conversation")
        messages = await self.read(ref)
        out = list(steps)
        for index, position in positions.items():
            step = steps[index]
            held = messages[position].role if position < len(messages) else None
            if held != step.role:
                found = f"a {held} message there" if held else f"only {len(messages)} messages"
                raise TranscriptError(
                    f"step {step.step} ({step.role}) of run chain {ref.chain_id} names message {position} of its "
                    f"stored conversation, which holds {found}: was storage changed by hand?"
                )
            out[index] = step.model_copy(update={"content": messages[position].content})
        return out

    async def load_steps(self, archives: list[StepArchive]) -> list[StepRecord]:
        """The archived steps, oldest run first."""
        steps: list[StepRecord] = []
        for archive in archives:
            data = await self._blobs.get(archive.key)
            if data is None:
                raise self._missing(f"the steps archived as {archive.key} are")
            steps.extend(_STEPS.validate_json(data))
        return [await self._step_filled(archive.key.split("/", 1)[0], step) for step in steps]

    async def _step_filled(self, chain_id: str, step: StepRecord) -> StepRecord:
        if step.result_stored is None or step.result is not None:
            return step
        stub = ToolResult(call_id=step.tool_call_id or "", name=step.tool_name or "", stored=step.result_stored)
        return step.model_copy(update={"result": (await self._fill(chain_id, stub)).text})

    def _remember(self, ref: TranscriptRef, messages: list[Message]) -> None:
        self._cache[ref.chain_id] = _Cached(ref, messages)
        self._cache.move_to_end(ref.chain_id)
        while len(self._cache) > self._cached_chains:
            self._cache.popitem(last=False)

    @staticmethod
    def _segment_key(chain_id: str, index: int) -> str:
        return f"{chain_id}/{index:08d}.json"

    @staticmethod
    def _result_key(chain_id: str, digest: str) -> str:
        return f"{chain_id}/results/{digest}.json"

    @staticmethod
    def _context_key(chain_id: str, digest: str) -> str:
        return f"{chain_id}/context-{digest}.json"


def _unfilled(result: ToolResult) -> bool:
    return result.stored is not None and not result.content and result.data is None


def _by_reference(message: Message) -> Message:
    if not any(result.stored is not None for result in message.tool_results):
        return message
    return message.model_copy(update={"tool_results": [result.by_reference() for result in message.tool_results]})


class MemoryBlobs:
    """A `BlobStore` in memory: for a model activity called alone, in a test or a notebook."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    async def put(self, key: str, data: bytes) -> None:
        self.blobs[key] = data

    async def get(self, key: str) -> bytes | None:
        return self.blobs.get(key)
