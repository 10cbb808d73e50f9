"""Python functions as agent tools.

A tool is a plain function, sync or async. Its JSON schema (what the model
sees) is derived from its signature and its docstring's `Args:` section, and
the model's arguments are validated against the same signature before the
function runs, so a typo in an argument name reaches the model as an error it
can fix rather than a crash.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from stalwart.contracts.agent import MAX_SECONDS
from stalwart.contracts.errors import InfrastructureError, UsageError
from stalwart.contracts.tools import DEFAULT_HEARTBEAT_TIMEOUT_SECONDS, ToolSpec


class RetryableToolError(InfrastructureError):
    """Raise from a tool when trying again later may succeed (a flaky service, a lock).

    Temporal then retries the call with backoff; any other exception goes
    straight back to the model as a tool error. `retry_after` (seconds) sets when the next attempt starts
    instead of the backoff, as a service's Retry-After would: the call's timeout and the run's deadline still
    bound it, and its attempts stay those of the retry policy. It is at most `MAX_SECONDS` (5 years), the longest
    Temporal holds: a larger one cannot become a retry delay, and is refused here, where the tool raises it.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        if retry_after is not None and not (math.isfinite(retry_after) and 0 <= retry_after <= MAX_SECONDS):
            raise ValueError(
                f"RetryableToolError({message!r}): retry_after must be a number of seconds, 0 or more and at most "
                f"{MAX_SECONDS:,} (5 years); got {retry_after!r}"
            )
        super().__init__(message)
        self.retry_after = retry_after


class ToolArgumentsError(UsageError):
    """The model's arguments do not fit the tool's signature."""


class ToolDefinitionError(UsageError, ValueError):
    """A tool defined or registered in a way that cannot work (a timeout out of range, two tools of one name, a name a
    model provider refuses)."""


class ToolSignatureError(ToolDefinitionError, TypeError):
    """A tool whose parameters cannot be described to a model (`*args`, `**kwargs`). Still a `TypeError`."""


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may want to know about its call.

    Declare a parameter annotated `ToolContext` to receive it; it is never
    shown to the model. `idempotency_key` is the same on every retry of this
    call, so a side-effecting tool can use it to do its effect once.
    """

    idempotency_key: str
    call_id: str
    run_inputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """A registered tool: the function, its argument model and how the loop should treat it."""

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[BaseModel]
    context_parameter: str | None = None
    side_effecting: bool = False
    requires_approval: bool = False
    timeout_seconds: float = 300.0
    heartbeat_timeout_seconds: float = DEFAULT_HEARTBEAT_TIMEOUT_SECONDS
    kind: str = "function"
    fast: bool = False

    def spec(self) -> ToolSpec:
        schema = _parameters_schema(self.arguments)
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=schema,
            kind=self.kind,
            side_effecting=self.side_effecting,
            requires_approval=self.requires_approval,
            timeout_seconds=self.timeout_seconds,
            heartbeat_timeout_seconds=self.heartbeat_timeout_seconds,
            fast=self.fast,
        )

    async def __call__(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """The tool's answer as the text a model reads."""
        return render_result(await self.invoke(arguments, context))

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """The tool's answer as the function returned it, after validating `arguments` against its signature."""
        try:
            validated = self.arguments.model_validate(arguments)
        except ValidationError as err:
            raise ToolArgumentsError(_describe_validation_error(err)) from None
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        if self.context_parameter:
            kwargs[self.context_parameter] = context
        if inspect.iscoroutinefunction(self.function):
            value = await self.function(**kwargs)
        else:
            value = await asyncio.to_thread(self.function, **kwargs)
        return value


@functools.lru_cache(maxsize=1024)
def _cached_schema(arguments: type[BaseModel]) -> dict[str, Any]:
    schema = arguments.model_json_schema()
    schema.pop("title", None)
    return schema


def _parameters_schema(arguments: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments: generated once per tool, not on every run's describe_tools
    (pydantic's schema generation was most of that activity's time). A copy, so no caller can change the cache."""
    return copy.deepcopy(_cached_schema(arguments))


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    side_effecting: bool = False,
    requires_approval: bool = False,
    timeout_seconds: float = 300.0,
    heartbeat_timeout_seconds: float = DEFAULT_HEARTBEAT_TIMEOUT_SECONDS,
    kind: str = "function",
    fast: bool = False,
) -> Any:
    """Make a function an agent tool: `@tool` or `@tool(side_effecting=True, timeout_seconds=30)`.

    `fast=True` runs it as a local activity, without a round trip through the server: for a quick function (well
    under a second) that may run again (docs/agents-and-tools.md#fast-tools)."""

    for label, seconds in (
        ("timeout_seconds", timeout_seconds),
        ("heartbeat_timeout_seconds", heartbeat_timeout_seconds),
    ):
        if not (isinstance(seconds, int | float) and 0 < seconds <= MAX_SECONDS):  # also refuses nan and inf
            raise ToolDefinitionError(
                f"@tool {label}={seconds!r}: give a number of seconds above 0 and at most {MAX_SECONDS:,} (5 years); "
                "Temporal holds no longer timeout"
            )
    if name is not None:
        _check_name(name)

    def wrap(fn: Callable[..., Any]) -> Tool:
        _refuse_unbound_method(fn)
        tool_name = name if name is not None else _check_name(fn.__name__)
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        model, context_parameter = _arguments_model(fn, arg_docs)
        return Tool(
            name=tool_name,
            description=description or summary,
            function=fn,
            arguments=model,
            context_parameter=context_parameter,
            side_effecting=side_effecting,
            requires_approval=requires_approval,
            timeout_seconds=timeout_seconds,
            heartbeat_timeout_seconds=heartbeat_timeout_seconds,
            kind=kind,
            fast=fast,
        )

    return wrap(function) if function is not None else wrap


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The tool names OpenAI and Anthropic accept: a name outside it is refused by the provider only when a run calls the
model, so it is refused here, where the tool is defined."""


def _check_name(name: object) -> str:
    """`name` if a model provider accepts it as a tool's name; else a `ToolDefinitionError` saying how to name it."""
    if isinstance(name, str) and _TOOL_NAME.fullmatch(name):
        return name
    why = "a lambda has no name of its own: " if name == "<lambda>" else ""
    raise ToolDefinitionError(
        f"tool name {name!r}: {why}a model can call a tool named with 1-64 letters, digits, '_' or '-' only; "
        'name it with @tool(name="...") (or tool(fn, name="..."))'
    )


def _refuse_unbound_method(fn: Callable[..., Any]) -> None:
    """Refuse a method taken from its class (`tool(Service.method)`): its `self` would be shown to the model as a
    parameter to fill, and the tool could not be called with an instance."""
    qualified = getattr(fn, "__qualname__", "").split(".")
    if not inspect.isfunction(fn) or len(qualified) < 2 or qualified[-2] == "<locals>":
        return  # a bound method, a module's function or a function nested in another
    first = next(iter(inspect.signature(fn).parameters.values()), None)
    if first is not None and first.name == "self":
        raise ToolDefinitionError(
            f"tool {fn.__qualname__}: a method taken from its class would show the model a parameter `self`; pass "
            f"the method of an instance (`tool(instance.{fn.__name__})`) or a function"
        )


KindHandler = Callable[[ToolSpec, dict[str, Any], ToolContext], Awaitable[Any]]
"""Runs any tool of one kind (e.g. "mcp"): gets the tool's spec, the arguments and the context; its return is
rendered like a tool's."""


class ToolRegistry:
    """The tools a worker can run, by name, and handlers for whole kinds of tools.

    Dispatch (Prompty's two layers): a tool registered under the called
    name wins; otherwise the handler registered for the tool's kind.
    """

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._kinds: dict[str, KindHandler] = {}
        for item in tools:
            self.register(item)

    def register_kind(self, kind: str, handler: KindHandler) -> None:
        """Handle every tool of `kind` that has no handler under its own name."""
        if kind in self._kinds and self._kinds[kind] is not handler:
            raise ToolDefinitionError(f"kind {kind!r} already has a handler; register one handler per kind")
        self._kinds[kind] = handler

    def kind_handler(self, kind: str) -> KindHandler | None:
        return self._kinds.get(kind)

    def register(self, item: Tool | Callable[..., Any]) -> Tool:
        registered = item if isinstance(item, Tool) else tool(item)
        if registered.name in self._tools and self._tools[registered.name] is not registered:
            raise ToolDefinitionError(
                f"two tools are named {registered.name!r}; give one of them another name with @tool(name=...)"
            )
        self._tools[registered.name] = registered
        return registered

    def register_module(self, module: object) -> list[Tool]:
        """Register every `@tool` defined at the top level of a module."""
        found = [value for value in vars(module).values() if isinstance(value, Tool)]
        return [self.register(t) for t in found]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def render_result(value: Any) -> str:
    """Tool results reach the model as text: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str)


def _arguments_model(fn: Callable[..., Any], arg_docs: dict[str, str]) -> tuple[type[BaseModel], str | None]:
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    context_parameter = None
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_parameter = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolSignatureError(
                f"tool {fn.__name__}: *args and **kwargs cannot be described to a model; name each parameter"
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, Field(default, description=arg_docs.get(param.name)))
    model = create_model(f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_parameter


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and its per-argument descriptions."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section, current = "args", None
            continue
        if (
            stripped.endswith(":")
            and not line.startswith(" ")
            and stripped[:-1] in ("Returns", "Raises", "Yields", "Examples")
        ):
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(line)
        elif section == "args":
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}"
    summary = " ".join(" ".join(summary_lines).split())
    return summary, args


def _describe_validation_error(err: ValidationError) -> str:
    problems = []
    for item in err.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden":
            problems.append(f"unexpected argument {where!r}")
        elif item["type"] == "missing":
            problems.append(f"missing required argument {where!r}")
        else:
            problems.append(f"argument {where!r}: {item['msg']}")
    return "; ".join(problems)
