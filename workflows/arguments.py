"""What a caller sent to the run, a signal or an update, decoded, or why it is not what the workflow takes.

Other SDKs and the Temporal CLI reach the session's `message`, `send`, `approve` and `reject` with any JSON.
Left to the SDK, a wrong shape was refused as "Failed decoding arguments" (an update) or dropped with a
traceback in the worker's log (a signal): neither said what the handler takes. The handlers take the raw
payload instead and decode it here, so the refusal names the handler, the shape it takes, and what came.
The run's own input is decoded here too: left to the SDK, one that does not decode would fail every workflow
task forever; decoded by the workflow, the run fails at once, saying what is wrong.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError

from stalwart.workflows import patches

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import failure_types, undecodable
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.errors import ConfigurationError
    from stalwart.contracts.run_input import ContinuedRunInput, RunInput
    from stalwart.workflows import interactions

_T = TypeVar("_T")
_Method = TypeVar("_Method", bound=Callable[..., Any])

NO_ARGUMENT = RawValue(Payload())
"""What a handler gets when the caller sent no argument at all."""

MESSAGE_SHAPE = "one argument, the message text as a JSON string (in the Temporal CLI: --input '\"hello\"')"
DECISION_SHAPE = (
    'one argument, the decision as a JSON object: {"call_id": "...", "reason": "..." (optional), '
    '"reviewer": "..." (optional)}; `stalwart pending RUN_ID` lists the waiting call ids'
)
SIGNALS = tuple(interactions.SIGNALS)
UPDATES = tuple(interactions.UPDATES)
QUERIES = tuple(interactions.QUERIES)
"""The names the run's handlers answer to: Stalwart's clients, other SDKs and the `temporal` CLI use these; the UI
reads them with what each does (workflows/interactions.py)."""
NOTE_CHARS = 500
"""The longest note a refused signal leaves in the run (`Visibility.note`): what came is untrusted."""

INVALID_ARGUMENT = failure_types.INVALID_ARGUMENT
"""The error type of a refused argument: not retryable, since the same argument is refused again."""

_SHOWN_BYTES = 120
_SHOWN_ARGUMENTS = 3

NO_INPUT = RawValue(Payload())
"""What the run gets when it is started with no input at all."""
INPUT_SCHEMA_HINT = (
    'the input is JSON {"agent": {...agent spec...}, "goal": "..."} (its JSON Schema: docs/run-input.schema.json)'
)


@dataclass(frozen=True)
class InputCount:
    """What `__init__` and `run` are handed instead of the input when a start sent more than one (`one_input`)."""

    count: int


def one_input(method: _Method) -> _Method:
    """The workflow's `__init__` or `run`, handed an `InputCount` when a start sent more than one input.

    The SDK calls both with the start's inputs as they came (`temporal workflow start --input A --input B`): one too
    many was a `TypeError` before any code of ours ran, and failed every workflow task until the run was terminated.
    The signature the SDK reads through the wrapper is `method`'s own, so the one input still comes as a `RawValue`.
    """
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def running(self: object, *inputs: object) -> Any:
            return await method(self, start_input(inputs))

        return cast(_Method, running)

    @functools.wraps(method)
    def starting(self: object, *inputs: object) -> Any:
        return method(self, start_input(inputs))

    return cast(_Method, starting)


def start_input(inputs: Sequence[Any]) -> Any:
    """What a start that sent `inputs` hands the run as its one input: the input, `NO_INPUT` for none, and an
    `InputCount` for more than one (`run_input` refuses it, naming the count)."""
    if len(inputs) > 1:
        return InputCount(len(inputs))
    return inputs[0] if inputs else NO_INPUT


def run_input(raw: RawValue | InputCount) -> tuple[ContinuedRunInput, str | None]:
    """The run's input, or a stand-in and the reason it is not one."""
    stand_in = ContinuedRunInput(agent=AgentSpec(name="invalid-input"), goal="")
    value, reason = decoded_run_input(raw, workflow.payload_converter())
    if value is None or isinstance(raw, InputCount):
        return stand_in, reason
    unknown = _unknown_fields(raw.payload) if value.carried is None else []
    # Asked only of an input that names an unknown field, so other runs record no marker; one recorded before ran on.
    if unknown and patches.active(patches.UNKNOWN_INPUT_FIELDS_REFUSED):
        return stand_in, f"invalid run input: {'; '.join(unknown)}; {INPUT_SCHEMA_HINT}"
    return value, None


def decoded_run_input(
    raw: RawValue | InputCount, converter: PayloadConverter
) -> tuple[ContinuedRunInput, None] | tuple[None, str]:
    """The run's input as `converter` decodes it, or None and the reason it is not one.

    The workflow asks it of its start's input with its own converter; replay asks it of a history file's, outside
    any workflow, to tell an input no run of this code would have gone on with from a change of the code."""
    if isinstance(raw, InputCount):
        return None, f"invalid run input: the run was started with {raw.count} inputs, not one; {INPUT_SCHEMA_HINT}"
    if not raw.payload.metadata:
        return None, f"invalid run input: the run was started without one; {INPUT_SCHEMA_HINT}"
    try:
        value = converter.from_payload(raw.payload, ContinuedRunInput)
    except ConfigurationError:  # sealed with a key this worker lacks (or with none): fail the task, not the run,
        raise  # so a worker that has the key runs it
    except Exception as err:  # pydantic's ValidationError, or JSON that does not parse
        reason = str(err).replace("\n", "; ")
        return None, f"invalid run input: {reason}; {INPUT_SCHEMA_HINT}"
    if not isinstance(value, ContinuedRunInput):  # `None`, bytes, a protobuf: see the note below
        return None, f"invalid run input: it is {_shown(raw.payload)}, not JSON; {INPUT_SCHEMA_HINT}"
    return value, None


def _unknown_fields(payload: Payload) -> list[str]:
    """What a caller's JSON input names at its top level that the run does not take, each with the nearest field
    it does take. The agent spec refuses its unknown fields itself; the input around it took them silently, so a
    misspelt `sesion` started a run of one goal instead of a session."""
    if payload.metadata.get("encoding") != b"json/plain":
        return []
    try:
        data = json.loads(payload.data)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    known = [name for name in RunInput.model_fields if name != "carried"]
    said = []
    for name in sorted(set(data) - set(ContinuedRunInput.model_fields)):
        nearest = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean `{nearest[0]}`?)" if nearest else ""
        said.append(f"unknown field `{printable(name[:_SHOWN_BYTES])}`{hint}; the input takes {', '.join(known)}")
    return said


def only(args: Sequence[RawValue], *, handler: str, takes: str) -> RawValue:
    """The argument of a handler that takes one, or an `ApplicationError` saying what came instead.

    The workflow's handlers are dynamic: the SDK hands them whatever came, undecoded, however many (a handler
    with a fixed signature failed every workflow task of the run on one argument too many). One the worker's
    codec could not open is refused first, with the codec's reason (which key, what to do)."""
    if not args:
        return NO_ARGUMENT
    sealed = next((why for arg in args if (why := undecodable.reason(arg.payload)) is not None), None)
    if sealed is not None:  # the codec could not open it (contracts/undecodable.py): say why, not "takes ..."
        raise _refused(f"`{handler}` got a payload this worker cannot open: {sealed}")
    if len(args) > 1:
        came = ", ".join(_shown(arg.payload) for arg in args[:_SHOWN_ARGUMENTS])
        more = ", …" if len(args) > _SHOWN_ARGUMENTS else ""
        raise _refused(f"`{handler}` takes {takes}; it got {len(args)} arguments: {came}{more}")
    return args[0]


def unknown(kind: str, name: str, known: Sequence[str]) -> ApplicationError:
    """The refusal of a signal, update or query by a name the run has no handler for.

    Worded as the SDK words it ("known queries: [...]"): the Temporal UI reads the names it offers from there."""
    plural = "queries" if kind == "query" else f"{kind}s"
    shown = printable(name[:_SHOWN_BYTES])
    return _refused(f"this run has no {kind} named {shown!r}; known {plural}: [{' '.join(sorted(known))}]")


def decoded(raw: RawValue, kind: type[_T], *, handler: str, takes: str) -> _T:
    """`raw` as `kind`, or an `ApplicationError` saying that `handler` takes `takes` and what came instead."""
    if not raw.payload.metadata and not raw.payload.data:
        raise _refused(f"`{handler}` takes {takes}; it got no argument")
    try:
        value = workflow.payload_converter().from_payload(raw.payload, kind)
    except Exception as err:  # pydantic's ValidationError, JSON that does not parse, an encoding we do not read
        raise _refused(f"`{handler}` takes {takes}; it got {_shown(raw.payload)} ({_first_problem(err)})") from None
    if not isinstance(value, kind):
        raise _refused(f"`{handler}` takes {takes}; it got {_shown(raw.payload)}, not JSON")
    return value


# The converters of the encodings that are not JSON (`binary/null`, `binary/plain`, `json/protobuf`,
# `binary/protobuf`) return what they read whatever type was asked for: `None` (what another SDK sends for nil),
# bytes, a protobuf message. Taken as the type asked for, it failed the handler (or the run's start) on every
# workflow task, and the run was stuck until terminated; so what is not of the type is refused like a wrong shape.


def _first_problem(err: Exception) -> str:
    errors = getattr(err, "errors", None)  # pydantic's ValidationError (workflow code imports no pydantic)
    if callable(errors) and errors():
        first = errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _refused(message: str) -> ApplicationError:
    return ApplicationError(message, type=INVALID_ARGUMENT, non_retryable=True)


def _shown(payload: Payload) -> str:
    """The start of what was sent, as printable text, for the refusal: what came is untrusted, so bytes that are
    no text and characters a terminal would act on are shown escaped."""
    encoding = printable(payload.metadata.get("encoding", b"").decode(errors="replace")[:_SHOWN_BYTES])
    if not encoding.startswith("json"):
        return f"a payload encoded as {encoding or 'nothing known'} ({len(payload.data):,} bytes)"
    text = printable(payload.data[:_SHOWN_BYTES].decode(errors="backslashreplace"))
    return text + ("…" if len(payload.data) > _SHOWN_BYTES else "")


def printable(text: str) -> str:
    """`text` with every character that is not printable (control characters, lone surrogates) escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
