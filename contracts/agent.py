"""The agent spec: what an agent is, independent of where it runs.

A spec travels inside the workflow input, so a run is fully described by its
history: replaying it needs no agent file.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from stalwart.contracts import patterns
from stalwart.contracts.model import Contract
from stalwart.contracts.output_schema import schema_of, schema_problems

ActionFormat = Literal["native", "json", "fenced"]


MAX_SECONDS = 5 * 365 * 86400
"""The longest duration an agent file may set (5 years): every duration becomes a Temporal timer or timeout,
which must fit a `timedelta` added to now, int64 nanoseconds (292 years) and the 10-year execution timeout some
Temporal servers (the time-skipping test server) give a workflow by default."""
MIN_SECONDS = 1
"""The shortest duration an agent file may set: below a second a duration is no setting but a mistake (an
`idle_timeout_seconds = 1e-9` ended a session before its first message could arrive)."""
MAX_TOKENS = 10**12
"""The largest token count an agent file may set: token totals are int64 search attributes (`AgentTokens`), and
a trillion tokens times the most steps a run may take still fits."""
MAX_STEPS = 100_000
DEFAULT_MAX_MESSAGE_CHARS = 10_000_000
"""Ten million characters: what external storage holds with ease (a 5 MB goal is accepted, issue 9); what the
model is sent of a long message is bounded separately, by `[context]`."""
MAX_MESSAGE_CHARS = 50_000_000
MAX_COST_USD = 1e9
MAX_SCRIPTED_TOKENS = 10**9
"""Tokens one scripted reply may claim: its usage is added up into the run's int64 token total."""
MAX_NESTING = 32
"""How deep tables and lists may nest in an agent file (sub-agents, `[extra]`)."""
MAX_AGENT_DEPTH = 32
"""How many levels of agents a team may have, the agent at its top counted: a run's input is JSON that the worker
decodes only 200 levels deep (pydantic's JSON parser), each level of sub-agents takes 3 of them, and the deepest
agent's own settings (`[extra]`, an `[output]` schema) need room too. At 68 levels of bare agents the run failed as
"Invalid JSON: recursion limit exceeded", which did not say the team nests too deep."""
STRUCTURED_OUTPUT_MODES = ("native", "prompt")
"""`[extra] structured_output`: how a provider is asked for an agent's `[output]` (docs/typed-output.md): `native`
(the default: its API's structured output) or `prompt` (the schema in the system prompt only, for a compatible server
that refuses `response_format`)."""
STREAM_DEADLINES = {"first_token_seconds": 90.0, "stall_seconds": 60.0}
"""The `[extra]` stream deadlines a provider reads, and their defaults (see `activities/providers/calling.py`)."""
MAX_STREAM_DEADLINE_SECONDS = 3600.0
"""A stream deadline longer than this could never fire: the model activity is cut by its own timeout first."""
MIN_STREAM_DEADLINE_SECONDS = 0.1
"""A stream deadline shorter than this cuts every stream: no provider answers, or sends its next event, sooner."""
BUILTIN_PROVIDERS = ("scripted", "auto", "openai", "openai-responses", "anthropic", "openai-compatible", "ollama")
"""The `provider` of `provider:model` that every worker knows; `stalwart check` refuses others."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""`${NAME}` in an MCP server's `env` or `headers`: the worker's environment variable NAME, one the worker lets agent
files read (docs/secrets.md); it is expanded nowhere else."""
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class _Strict(Contract):
    # No inf or nan anywhere: `max_seconds = inf` is not "no budget", and Temporal holds neither.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        # A boolean is an int to Python and to pydantic: `max_message_chars = true` would be 1. Every numeric
        # field of every section refuses one, a field added later included.
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            kinds = set(get_args(annotation)) or {annotation}
            if kinds & {int, float} and bool not in kinds:
                raise PydanticCustomError(
                    "float_type" if float in kinds else "int_type",
                    "a number is needed, not the boolean `{value}`",
                    {"value": str(value).lower()},
                )
        return value


def env_name(value: str | None, field: str) -> str | None:
    """The name of a worker environment variable, as a shell would write it."""
    if value is not None and not _ENV_NAME.fullmatch(value):
        raise ValueError(
            f"`{field}` names an environment variable: use letters, digits and '_' (not starting with a digit), "
            f"e.g. `OPENAI_API_KEY`"
        )
    return value


def nesting(value: Any) -> int:
    """How deep dicts and lists nest in `value` (0 for a scalar), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_NESTING:  # deep enough to refuse: no need to walk further
            todo.extend((child, depth + 1) for child in children)
    return deepest


def too_deep(names: Sequence[str], *, more: bool = False) -> str:
    """Why a chain of agents `names` (each the sub-agent of the one before) is refused: it is longer than
    MAX_AGENT_DEPTH. Said the same by the agent-file loader and by `AgentSpec` (a Python spec, a client's JSON);
    `more` when the chain goes on past its last name (the loader reads no further)."""
    shown = " > ".join(names) if len(names) <= 8 else " > ".join([*names[:3], "…", *names[-3:]])
    return (
        f"sub-agents nest {'at least ' if more else ''}{len(names)} levels deep ({shown}{' > …' if more else ''}); "
        f"a team has at most {MAX_AGENT_DEPTH} levels of agents "
        "(a run's input nests each level in its JSON, and a worker decodes it only so deep): "
        "give an agent several sub-agents side by side instead of a chain, or remove levels"
    )


_TEAM_MEASURED: ContextVar[bool] = ContextVar("stalwart_team_measured", default=False)
"""Set while the agents of a team measured by `AgentSpec._team_not_too_deep` are validated."""


def deepest_chain(agent: Any) -> list[str]:
    """The names along the longest chain of inline sub-agents from `agent` (a spec, or its data), the agent first.

    Without recursion, and each agent counted once however many times it is named (a team built in Python may reuse
    one spec object), so a team too deep or too wide for validation is measured before it is validated."""
    below: dict[int, list[str]] = {}
    open_: set[int] = set()
    todo: list[tuple[Any, str, bool]] = [(agent, _agent_name(agent, "?"), False)]
    while todo:
        item, name, done = todo.pop()
        if id(item) in below or (not done and id(item) in open_):  # measured, or a loop a validator refuses
            continue
        subs = _inline_sub_agents(item)
        if not done:
            open_.add(id(item))
            todo.append((item, name, True))
            todo.extend((spec, sub_name, False) for spec, sub_name in subs)
            continue
        open_.discard(id(item))
        below[id(item)] = [name, *max((below.get(id(spec), []) for spec, _ in subs), key=len, default=[])]
    return below[id(agent)]


def _inline_sub_agents(agent: Any) -> list[tuple[Any, str]]:
    """The specs (objects or data) of an agent's inline sub-agents, each with its name."""
    subs = agent.get("sub_agents") if isinstance(agent, dict) else getattr(agent, "sub_agents", None)
    found: list[tuple[Any, str]] = []
    for sub in subs if isinstance(subs, list | tuple) else ():
        if isinstance(sub, BaseModel) and not isinstance(sub, SubAgent):  # an AgentSpec given as a sub-agent
            found.append((sub, _agent_name(sub, "?")))
            continue
        spec = sub.get("spec") if isinstance(sub, dict) else getattr(sub, "spec", None)
        if isinstance(spec, dict | BaseModel):
            found.append((spec, _agent_name(spec, _agent_name(sub, "?"))))
    return found


def _agent_name(agent: Any, default: str) -> str:
    name = agent.get("name") if isinstance(agent, dict) else getattr(agent, "name", None)
    return name if isinstance(name, str) else default


def _seconds(default: float | None, *, description: str) -> Any:
    """A duration field: finite, at least MIN_SECONDS and at most MAX_SECONDS."""
    return Field(
        default,
        ge=MIN_SECONDS,
        le=MAX_SECONDS,
        description=f"{description} At least {MIN_SECONDS:g}, at most {MAX_SECONDS:,} (5 years).",
    )


def identifier(value: str, longest: int, why: str = "") -> str:
    """Names that become tool names, workflow ids and prefixes: what every provider and Temporal accept."""
    if not re.fullmatch(rf"[A-Za-z][A-Za-z0-9_-]{{0,{longest - 1}}}", value):
        raise ValueError(f"use 1-{longest} letters, digits, '-' or '_', starting with a letter{why}")
    return value


def no_repeats(names: Iterable[str], message: str) -> None:
    """Refuse names given more than once; `message` has a `{}` for them,
    e.g. "tools listed twice: {}; list each tool once"."""
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise ValueError(message.format(", ".join(repeated)))


def http_url(value: str, example: str) -> str:
    """URLs the worker fetches over HTTP; `example` shows a good one in the error."""
    if not re.match(r"https?://[^/\s]+", value):
        raise ValueError(f"use an http:// or https:// URL such as `{example}`")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - reading it checks it: a port over 65535 or not a number raises
    except ValueError as err:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        raise ValueError(f"`{value}` is not a URL a client can open ({err}); use one such as `{example}`") from None
    if not parts.hostname or any(char.isspace() or not char.isprintable() for char in value):
        shown = value.encode("unicode_escape").decode()
        raise ValueError(
            f"`{shown}` names no host, or holds a space or control character; use a URL such as `{example}`"
        )
    return value


class Budgets(_Strict):
    """Limits that end a run. Whichever is reached first stops it."""

    max_steps: int = Field(
        10, ge=1, le=MAX_STEPS, description="Model calls before the run stops with `max_steps` (at most 100,000)."
    )
    max_seconds: float | None = _seconds(None, description="Wall-clock seconds, held by a durable timer.")
    max_tokens: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="Cumulative input + output tokens (at most 10**12)."
    )
    max_cost_usd: float | None = Field(
        None, gt=0, le=MAX_COST_USD, description="Cumulative cost from the price table (at most 1e9)."
    )
    max_parallel_tools: int = Field(4, ge=1, le=256, description="Tool calls of one step that run at once.")
    finalize_on_budget: bool = Field(
        False,
        description="At max_steps or max_tokens, make one last model call without tools for a best-effort answer.",
    )


class SessionSettings(_Strict):
    """How a long-lived run behaves: a session between messages, and any run across continue-as-new."""

    idle_timeout_seconds: float | None = _seconds(
        None, description="A session with no message for this long ends with `idle`."
    )
    continue_as_new_events: int | None = Field(
        None,
        ge=20,
        le=50_000,
        description=(
            "Continue as new once the history has this many events, at the next safe point "
            "(default: when Temporal suggests it)."
        ),
    )
    max_cost_usd: float | None = Field(
        None,
        gt=0,
        le=MAX_COST_USD,
        description="A session that has spent this much over its whole life takes no further message.",
    )
    max_message_chars: int = Field(
        DEFAULT_MAX_MESSAGE_CHARS,
        ge=1,
        le=MAX_MESSAGE_CHARS,
        description="Longer messages to a session, and longer goals, are refused before they enter history.",
    )


ContextStrategy = Literal["sliding_window", "summarize", "none"]


class ContextSettings(_Strict):
    """What the model is sent of a long conversation; the record always keeps everything."""

    strategy: ContextStrategy = Field(
        "sliding_window",
        description=(
            "`sliding_window` drops the oldest turns to fit `max_input_tokens`; `summarize` replaces them, when the "
            "conversation no longer fits, by a summary the model writes in a model call of its own, "
            "keeping the newest messages that fit half the window; `none` sends everything."
        ),
    )
    max_input_tokens: int = Field(
        100_000, ge=1_000, le=10_000_000, description="The most the model is sent, estimated at 4 characters a token."
    )
    max_tool_result_chars: int = Field(
        50_000,
        ge=100,
        le=10_000_000,
        description="A longer tool result reaches the model cut, with a marker saying how much was cut.",
    )


DEFAULT_TEMPERATURE = 0.2
"""The temperature of a model whose agent sets none (the production loop tutorial, seed 003: "low temperature
(0.0–0.2)" against format drift on long runs); models that take no temperature (OpenAI reasoning models, Anthropic's,
which deprecated it) get none."""
PERSISTENCE_PROMPT = (
    "Do not give up yet, and do not ask the user to do what your tools can do. Try at least three different "
    "approaches before giving up. Tools are cheap; the user prefers a slow correct answer to a fast wrong one."
)
"""Seed 003's mitigation of premature giving-up, sent when an answer gives up while tools are at hand."""
GIVE_UP_PATTERNS = [
    r"\bI(?:'m| am) (?:sorry|afraid|unable)\b",
    r"\bI (?:was(?: not|n't)|could(?: not|n't)|can(?:not|'t)) (?:able to )?"
    r"(?:find|get|access|retrieve|determine|locate|look|fetch|verify|complete)",
    r"\b(?:you|the user) (?:can|could|may|might|should|will need to|would need to) "
    r"(?:try|check|search|look|visit|use|run|consult|find|call|contact|refer)",
    r"\bplease (?:check|try|search|look|visit|run|consult|refer)\b",
]
"""Answers that give up (seed 003: "I'm sorry, I wasn't able to find the information you requested") or hand the
user work a tool could do; matched case-insensitively."""


class LoopSettings(_Strict):
    """How the loop talks to the model, beyond budgets: what it parses and how it keeps a long run on track."""

    enable_tools: bool = Field(
        True,
        description=(
            "When false, the agent's tools are not described in the prompt nor offered to the model, and "
            "replies are not parsed for tool calls: a reply holding a `tool_call` block (or a JSON tool action) is "
            "the final response."
        ),
    )
    enable_delegation: bool = Field(
        True,
        description=(
            "When false, the sub-agents are not described in the prompt nor offered to the model, and "
            "replies are not parsed for delegations: a reply holding a `delegate` block (or a JSON delegation) is "
            "the final response."
        ),
    )
    tool_reminder_every: int = Field(
        10,
        ge=0,
        le=MAX_STEPS,
        description=(
            "Every this many model calls, a one-line reminder of the tools and their schemas is sent "
            "before the next call, against format drift on long runs; 0 turns it off."
        ),
    )
    persistence_nudges: int = Field(
        1,
        ge=0,
        le=10,
        description=(
            "An answer that gives up early while the agent has tools (it matches `give_up_patterns`) is "
            "answered with `persistence_prompt` and the turn goes on, at most this many times a turn; 0 turns it off."
        ),
    )
    persistence_prompt: str = Field(PERSISTENCE_PROMPT, min_length=1, max_length=10_000)
    give_up_patterns: list[str] = Field(
        default_factory=lambda: list(GIVE_UP_PATTERNS),
        max_length=100,
        description=(
            "Regular expressions (matched case-insensitively) of answers that give up. They run in linear time "
            "(Rust's regex syntax, Python's for everyday patterns), so no lookarounds or backreferences."
        ),
    )

    @field_validator("give_up_patterns")
    @classmethod
    def _patterns_run_in_linear_time(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if problem := patterns.pattern_problem(pattern, ignore_case=True):
                raise ValueError(f"give_up_patterns: {pattern!r} {problem}")
        return value


class ScriptedToolCall(_Strict):
    """A tool call the `scripted` model makes; ids default to `call_<step>_<n>`."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptedReply(_Strict):
    """One reply of the `scripted` model: text, tool calls, or both."""

    text: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    input_tokens: int = Field(10, ge=0, le=MAX_SCRIPTED_TOKENS)
    output_tokens: int = Field(10, ge=0, le=MAX_SCRIPTED_TOKENS)


class _McpServerBase(_Strict):
    name: str = Field(
        description="Names the server in errors; prefixes its tools as `name__tool` when a tool name collides."
    )
    tools: list[str] | None = Field(
        None, description="Only these tools of the server are offered; all of them when unset."
    )
    handshake_seconds: float = _seconds(
        30.0,
        description=(
            "How long the server may take to start and answer the MCP handshake (`initialize`) before the call "
            "fails naming it; raise it for a server that is slow to start (e.g. `npx` downloading it)."
        ),
    )

    @field_validator("name")
    @classmethod
    def _server_name(cls, value: str) -> str:
        return identifier(value, 32)

    @field_validator("tools")
    @classmethod
    def _allowlist_unique(cls, value: list[str] | None) -> list[str] | None:
        no_repeats(value or [], "tools listed twice: {}; list each tool once")
        return value


class McpStdioServer(_McpServerBase):
    """An MCP server the worker starts as a subprocess and talks to over its stdin and stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1, description="`python` means the worker's own interpreter.")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Added to a minimal environment; `${NAME}` is read from the worker's environment, keeping secrets out "
            "of history: a variable agent files may read, such as `STALWART_AGENT_*` (docs/secrets.md)."
        ),
    )
    cwd: str | None = Field(
        None,
        description=(
            "Working directory of the server; relative `args` are relative to it. "
            "Agent files default it to their own directory."
        ),
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            env_name(key, f"env.{key}")
            if "\0" in text:
                raise ValueError(f"`env.{key}` holds a NUL character, which no environment can hold; remove it")
        return value

    @field_validator("command", "cwd")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\0" in value:
            raise ValueError("holds a NUL character, which no command line can hold; remove it")
        return value

    @field_validator("args")
    @classmethod
    def _args_no_nul(cls, value: list[str]) -> list[str]:
        if any("\0" in arg for arg in value):
            raise ValueError("an argument holds a NUL character, which no command line can hold; remove it")
        return value


class McpHttpServer(_McpServerBase):
    """An MCP server reached over streamable HTTP."""

    transport: Literal["http"] = "http"
    url: str = Field(description="The server's MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Sent with every request; `${NAME}` is read from the worker's environment, keeping secrets out of "
            "history: a variable agent files may read, such as `STALWART_AGENT_*` (docs/secrets.md)."
        ),
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return http_url(value, "http://127.0.0.1:8000/mcp")

    @field_validator("headers")
    @classmethod
    def _header_shape(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if not _HEADER_NAME.fullmatch(key):
                raise ValueError(f"header name {key!r} is not an HTTP header name: use letters, digits and '-'")
            if any(char in text for char in "\r\n\0"):
                raise ValueError(f"header `{key}` holds a line break or NUL, which HTTP cannot send; remove it")
            if not text.isascii():
                raise ValueError(
                    f"header `{key}` holds characters that are not ASCII, which HTTP headers cannot carry; "
                    "percent-encode them, or put the value in an environment variable the server decodes"
                )
        return value


def mcp_transport(value: Any) -> str | None:
    """`transport` when given, else inferred: `command` means stdio, `url` means http."""
    if isinstance(value, BaseModel):
        return getattr(value, "transport", None)
    if not isinstance(value, dict):
        return None
    if "transport" in value:
        return value["transport"]
    return "stdio" if "command" in value else "http" if "url" in value else None


McpServerSpec = Annotated[
    Annotated[McpStdioServer, Tag("stdio")] | Annotated[McpHttpServer, Tag("http")],
    Discriminator(
        mcp_transport,
        custom_error_type="mcp_transport",
        custom_error_message='set `transport = "stdio"` with a `command`, or `transport = "http"` with a `url`',
    ),
]
"""An MCP server of an agent, told apart by `transport`."""

SubAgentMode = Literal["agentic", "single"]


class SubAgent(_Strict):
    """Another agent this one may delegate to, offered to its model as a tool `name` taking a `task`.

    Exactly one of `file`, `spec` or `url` says who it is. The agent-file
    loader reads `file` into `spec` (keeping the path for the record), so a
    run's input holds the whole team and its replay needs no files.
    """

    name: str = Field(description="The tool name the model calls to delegate, e.g. `researcher`.")
    description: str = Field(
        "",
        description="What the model is told the agent does; by default the agent's own description, or its A2A card.",
    )
    file: str | None = Field(
        None, description="An agent file, relative to the agent file that declares this sub-agent."
    )
    spec: AgentSpec | None = Field(
        None, description="The agent itself, inline; its `name` defaults to the sub-agent's."
    )
    url: str | None = Field(None, description="A remote agent reached over A2A: its base URL or the URL of its card.")
    auth_token_env: str | None = Field(
        None,
        description=(
            "With `url`: the worker's environment variable holding a bearer token "
            "(one the worker lets agent files read, such as `STALWART_AGENT_*`; never a provider's key)."
        ),
    )
    mode: SubAgentMode = Field(
        "agentic",
        description="`agentic`: the agent's whole loop as a child run; `single`: one model call without tools.",
    )

    @model_validator(mode="before")
    @classmethod
    def _inline_spec_named(cls, data: Any) -> Any:
        # Only an inline spec: the spec of a sub-agent `file` (read in by the loader) names itself, or is refused.
        if (
            isinstance(data, dict)
            and data.get("file") is None
            and isinstance(data.get("spec"), dict)
            and "name" not in data["spec"]
        ):
            return {**data, "spec": {"name": data.get("name"), **data["spec"]}}
        return data

    @field_validator("name")
    @classmethod
    def _tool_name(cls, value: str) -> str:
        return identifier(value, 64, " (it becomes a tool name)")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value, "http://127.0.0.1:9999/researcher")

    @field_validator("auth_token_env")
    @classmethod
    def _token_env_name(cls, value: str | None) -> str | None:
        return env_name(value, "auth_token_env")

    @model_validator(mode="after")
    def _one_source(self) -> SubAgent:
        if self.url is not None:
            if self.file is not None or self.spec is not None:
                raise ValueError(f"sub-agent {self.name!r}: set only one of `file`, `spec` or `url`")
            if self.mode == "single":
                raise ValueError(
                    f'sub-agent {self.name!r}: `mode = "single"` needs a local agent (`file` or `spec`); '
                    "remove `mode` for a `url`"
                )
        elif self.file is None and self.spec is None:
            raise ValueError(
                f'sub-agent {self.name!r} says nothing about who it is: set `file = "{self.name}.toml"`, '
                f'an inline `spec` table, or `url = "http://..."`'
            )
        elif self.auth_token_env is not None:
            raise ValueError(f"sub-agent {self.name!r}: `auth_token_env` is only for a remote agent (`url`); remove it")
        return self


MAX_OUTPUT_RETRIES = 10
"""The most times a run asks the model again for an answer that did not validate against `[output]`."""
MAX_SCHEMA_CHARS = 1_000_000
"""The longest output schema (as JSON): it travels in every run's input and in every model request that carries the
agent, and no provider takes a larger one."""


class OutputSpec(_Strict):
    """What the agent returns: a JSON value valid against `schema`, asked of the model the strongest way its provider
    supports, validated by the run, and asked for again (with the errors) up to `retries` times.

    In an agent file, `[output]` with the JSON Schema written as TOML tables (`[output.schema]`), or `schema_file`,
    a JSON file relative to the agent file that the agent-file loader reads into `schema`: a run's input always
    carries the schema itself, so its replay needs no file. In Python, `OutputSpec.for_type(Refund)` builds it from
    any type pydantic can validate.
    """

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    schema_: dict[str, Any] | None = Field(
        None,
        alias="schema",
        description="The JSON Schema of the answer, inline (TOML tables in an agent file).",
    )
    schema_file: str | None = Field(
        None,
        description="A JSON file holding the schema, relative to the agent file; read into `schema` when it loads.",
    )
    retries: int = Field(
        2,
        ge=0,
        le=MAX_OUTPUT_RETRIES,
        description="How many times an answer that does not validate is sent back to the model with the errors.",
    )
    name: str = Field(
        "final_result",
        description="The final-answer tool's name, where a provider is given the schema as a tool.",
    )
    description: str = Field("", description="What the answer is, told to the model with the schema.")

    @field_validator("name")
    @classmethod
    def _tool_name(cls, value: str) -> str:
        return identifier(value, 64, " (it becomes a tool name)")

    @field_validator("schema_", mode="before")
    @classmethod
    def _valid_schema(cls, value: Any) -> Any:
        if value is not None:
            problems = schema_problems(value, longest=MAX_SCHEMA_CHARS)
            if problems:
                raise ValueError("not a JSON Schema Stalwart can validate: " + "; ".join(problems))
        return value

    @model_validator(mode="after")
    def _has_schema(self) -> OutputSpec:
        if self.schema_ is None:
            raise ValueError(
                "[output] needs the answer's JSON Schema: an `[output.schema]` table, or "
                '`schema_file = "answer.schema.json"` (read by the agent-file loader; in Python, use '
                "`OutputSpec.for_type(YourModel)`)"
            )
        return self

    @classmethod
    def for_type(cls, tp: Any, **settings: Any) -> OutputSpec:
        """The output spec of a type pydantic can validate (a model, a dataclass, `list[int]` ...): its JSON Schema.

        `settings` are the other fields (`retries`, `name`, `description`). Raises `OutputTypeError` for a type
        pydantic builds no JSON Schema for."""
        return cls.model_validate({**settings, "schema": schema_of(tp)})


class ToolFunctions(tuple[Any, ...]):
    """The `@tool` functions an `AgentSpec` was given in Python, kept beside the names it stores.

    Not part of what the agent is: a spec travels as JSON (names only), so two specs that differ only in these
    are equal, and the spec of an agent file equals the same agent written in Python."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolFunctions)

    def __hash__(self) -> int:
        return 0


def _is_tool_function(item: Any) -> bool:
    """A function decorated with `@tool` (`stalwart.activities.tools.registry.Tool`), told by its shape: the
    contracts import no other layer."""
    return isinstance(getattr(item, "name", None), str) and callable(getattr(item, "spec", None)) and callable(item)


class AgentSpec(_Strict):
    """An agent: its instructions, its model, its tools and its budgets."""

    # In Python, `tools` may list the `@tool` functions themselves and `sub_agents` other `AgentSpec`s: the spec
    # stores their names (a sub-agent inline), and keeps the functions so that `StalwartPlugin(agents=[...])`
    # registers them on the worker (`tool_functions()`). Not in the docstring: that is the published schema's.
    _tool_functions: ToolFunctions = PrivateAttr(default_factory=ToolFunctions)

    name: str = Field(description="Identifier of the agent: letters, digits, '-' and '_'.")
    description: str = ""
    instructions: str = "You are a helpful assistant."
    model: str = Field("scripted", description="`scripted`, or `provider:model` such as `openai:gpt-4.1-mini`.")
    base_url: str | None = None
    api_key_env: str | None = Field(
        None,
        description=(
            "Name of the worker's environment variable holding the API key: one the worker lets agent files read "
            "(`STALWART_AGENT_*`, docs/secrets.md), or the provider's own key for a model of that provider."
        ),
    )
    temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description=(
            f"Sampling temperature; unset, {DEFAULT_TEMPERATURE} (low, against format drift on long runs), except for "
            "models that take none: OpenAI's o-series and gpt-5 reasoning models, and Anthropic's (deprecated there)."
        ),
    )
    max_output_tokens: int | None = Field(None, ge=1, le=10_000_000)
    action_format: ActionFormat = "native"
    tools: list[str] = Field(default_factory=list)
    history_limit: int | None = Field(
        None, ge=2, le=1_000_000, description="Keep the goal and the last N messages when calling the model."
    )
    budgets: Budgets = Field(default_factory=Budgets)
    scripted: list[ScriptedReply] = Field(
        default_factory=list, description="Replies of the `scripted` model, in order."
    )
    mcp_servers: list[McpServerSpec] = Field(
        default_factory=list, description="MCP servers whose tools the agent may call."
    )
    sub_agents: list[SubAgent] = Field(
        default_factory=list, description="Agents this agent may delegate tasks to, each offered as a tool."
    )
    bindings: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description=(
            "Tool name -> {parameter: run input name}: "
            "bound parameters come from the run's inputs, hidden from the model."
        ),
    )
    require_approval: list[str] = Field(
        default_factory=list,
        description="Tools whose calls wait for a person's approval (besides tools marked so in code).",
    )
    approval_timeout_seconds: float = _seconds(
        86400, description="How long a call waits for approval before it is rejected (durable timer)."
    )
    thrash_guard: bool = Field(
        True, description="Answer a repeated identical call of a read-only tool with its earlier result and a note."
    )
    session: SessionSettings = Field(default_factory=SessionSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    loop: LoopSettings = Field(default_factory=LoopSettings)
    output: OutputSpec | None = Field(
        None,
        description=(
            "What the agent returns (`[output]`): a JSON value valid against a schema, in `AgentResult.output`; "
            "unset, its answer is text."
        ),
    )
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Free-form settings for extensions; the stream deadlines `first_token_seconds` and `stall_seconds` "
            f"are numbers of seconds, at least {MIN_STREAM_DEADLINE_SECONDS:g} and at most "
            f"{MAX_STREAM_DEADLINE_SECONDS:g}."
        ),
    )

    @field_validator("name")
    @classmethod
    def _name_is_identifier(cls, value: str) -> str:
        return identifier(value, 64)

    @field_validator("output", mode="before")
    @classmethod
    def _output_of_a_type(cls, value: Any) -> Any:
        # `output=Refund` in Python: the type's JSON Schema, as `OutputSpec.for_type(Refund)` builds it.
        if value is None or isinstance(value, dict | OutputSpec):
            return value
        return OutputSpec.for_type(value)

    @model_validator(mode="wrap")
    @classmethod
    def _tools_given_as_functions(cls, data: Any, handler: ModelWrapValidatorHandler[AgentSpec]) -> AgentSpec:
        # `tools=[lookup_order]`: the spec stores the name, and keeps the function for the worker's plugin.
        functions: list[Any] = []
        if isinstance(data, dict) and isinstance(data.get("tools"), list | tuple):
            names: list[Any] = []
            for item in data["tools"]:
                if _is_tool_function(item):
                    functions.append(item)
                    names.append(item.name)
                elif callable(item) and not isinstance(item, str):
                    raise ValueError(
                        f"tools: {getattr(item, '__name__', item)!r} is a function not decorated with @tool; "
                        "decorate it (`from stalwart import tool`), or list the tool's name"
                    )
                else:
                    names.append(item)
            data = {**data, "tools": names}
        spec = handler(data)
        if functions:
            spec._tool_functions = ToolFunctions(functions)
        return spec

    def tool_functions(self) -> list[Any]:
        """The `@tool` functions this agent and its sub-agents (inline, at any depth) were given in Python."""
        found: list[Any] = []
        todo = [self]
        while todo:
            spec = todo.pop()
            found.extend(spec._tool_functions)
            todo.extend(sub.spec for sub in spec.sub_agents if sub.spec is not None)
        return found

    @field_validator("sub_agents", mode="before")
    @classmethod
    def _sub_agents_given_as_specs(cls, value: Any) -> Any:
        # `sub_agents=[researcher]`: an inline sub-agent of that name, described as the agent describes itself.
        if isinstance(value, list | tuple):
            return [SubAgent(name=item.name, spec=item) if isinstance(item, AgentSpec) else item for item in value]
        return value

    @field_validator("tools")
    @classmethod
    def _tools_unique(cls, value: list[str]) -> list[str]:
        no_repeats(value, "tools listed twice: {}; list each tool once")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _key_env_name(cls, value: str | None) -> str | None:
        return env_name(value, "api_key_env")

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value, "http://localhost:8000/v1")

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str) -> str:
        prefix, colon, name = value.partition(":")
        if not prefix or (colon and not name.strip()):
            raise ValueError(
                "write the model as `provider:model-name`, e.g. `openai:gpt-4.1-mini`, or `scripted` or `auto`"
            )
        return value

    @field_validator("extra")
    @classmethod
    def _stream_deadlines(cls, value: dict[str, Any]) -> dict[str, Any]:
        if nesting(value) > MAX_NESTING:
            raise ValueError(f"nests deeper than {MAX_NESTING} levels; flatten it")
        mode = value.get("structured_output", "native")
        if mode not in STRUCTURED_OUTPUT_MODES:
            modes = " or ".join(map(repr, STRUCTURED_OUTPUT_MODES))
            raise ValueError(f"`extra.structured_output` says how [output] is asked for: {modes}, not {mode!r}")
        for key in STREAM_DEADLINES:
            if key not in value:
                continue
            seconds = value[key]
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not (
                    math.isfinite(seconds) and MIN_STREAM_DEADLINE_SECONDS <= seconds <= MAX_STREAM_DEADLINE_SECONDS
                )
            ):
                raise ValueError(
                    f"`extra.{key}` is a stream deadline in seconds: give a number at least "
                    f"{MIN_STREAM_DEADLINE_SECONDS:g} and at most "
                    f"{MAX_STREAM_DEADLINE_SECONDS:g} (default {STREAM_DEADLINES[key]:g}), not {seconds!r}"
                )
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _team_not_too_deep(cls, data: Any, handler: ModelWrapValidatorHandler[AgentSpec]) -> AgentSpec:
        # Measured once, by the agent validated first (the top one), before validation goes down into the team: past
        # 85 levels it gave up with pydantic's "maximum validation depth exceeded", and a JSON input failed to parse
        # past 67 levels. The agents below are validated while `_TEAM_MEASURED` says it is done.
        if _TEAM_MEASURED.get():
            return handler(data)
        chain = deepest_chain(data)
        if len(chain) > MAX_AGENT_DEPTH:
            raise ValueError(too_deep(chain))
        token = _TEAM_MEASURED.set(True)
        try:
            return handler(data)
        finally:
            _TEAM_MEASURED.reset(token)

    @model_validator(mode="after")
    def _compatible_needs_url(self) -> AgentSpec:
        if self.model.startswith("openai-compatible:") and not self.base_url:
            raise ValueError(
                f"model {self.model!r} is served by an OpenAI-compatible server: set its `base_url`, "
                'e.g. base_url = "http://localhost:8000/v1" for vLLM'
            )
        return self

    @model_validator(mode="after")
    def _output_name_free(self) -> AgentSpec:
        # Where the schema is offered as the final-answer tool, a tool of the same name could not be told from it.
        if self.output is not None and self.output.name in {*self.tools, *(sub.name for sub in self.sub_agents)}:
            raise ValueError(
                f"[output] name {self.output.name!r} is also the name of one of the agent's tools; set `name` under "
                "[output] to another (it names the final-answer tool)"
            )
        return self

    @field_validator("mcp_servers")
    @classmethod
    def _server_names_unique(cls, value: list[McpStdioServer | McpHttpServer]) -> list[McpStdioServer | McpHttpServer]:
        no_repeats((server.name for server in value), "MCP servers named twice: {}; give each server its own name")
        return value

    @field_validator("sub_agents")
    @classmethod
    def _sub_agent_names_free(cls, value: list[SubAgent], info: ValidationInfo) -> list[SubAgent]:
        names = [sub.name for sub in value]
        no_repeats(names, "sub-agents named twice: {}; give each sub-agent its own name")
        taken = sorted(set(names) & set(info.data.get("tools", [])))
        if taken:
            raise ValueError(
                f"sub-agent name(s) {', '.join(taken)} are also in `tools`; "
                "rename the sub-agent, as the model calls both by name"
            )
        return value


def unknown_tool_names(spec: AgentSpec, tools: Iterable[str] | None = None) -> str | None:
    """Why the agent's `require_approval` or `[bindings]` name a tool it does not have, if they do.

    A misspelt name in `require_approval` is no harmless typo: the tool it meant runs without waiting for anyone.
    `tools` is every tool name the model is offered, MCP tools included, as a run lists them. Without it only the
    agent file's own names (`tools`, sub-agents) are known, so an agent with MCP servers is not judged until a run
    (or `stalwart check`) lists their tools.
    """
    if tools is None:
        if spec.mcp_servers:
            return None
        tools = ()
    known = {*tools, *spec.tools, *(sub.name for sub in spec.sub_agents)}
    problems = [
        f"`{field}` names tool(s) {', '.join(unknown)}"
        for field, names in (("require_approval", spec.require_approval), ("[bindings]", spec.bindings))
        if (unknown := sorted(name for name in names if name not in known))
    ]
    if not problems:
        return None
    meant = sorted(
        f"`{close[0]}` for {name}"
        for name in {*spec.require_approval, *spec.bindings} - known
        if (close := difflib.get_close_matches(name, known, n=1))
    )
    hint = f" (did you mean {', '.join(meant)}?)" if meant else ""
    return (
        f"agent {spec.name!r}: {' and '.join(problems)} that it does not have (its tools: "
        f"{', '.join(sorted(known)) or 'none'}); a misspelt name there leaves the tool it meant without its approval "
        f"or binding: fix the name in the agent file{hint}"
    )
