"""Agent files: TOML documents that describe an `AgentSpec`.

Every problem is reported with the file, the field and what to do about it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import tomllib
import types
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import Annotated, Any, Union, cast, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError
from pydantic.fields import FieldInfo

from stalwart.activities import secrets
from stalwart.client.tool_names import binding_problems
from stalwart.contracts.agent import (
    BUILTIN_PROVIDERS,
    ENV_REFERENCE,
    MAX_AGENT_DEPTH,
    MAX_NESTING,
    AgentSpec,
    McpStdioServer,
    mcp_transport,
    nesting,
    too_deep,
    unknown_tool_names,
)
from stalwart.contracts.errors import UsageError


class AgentFileError(UsageError, ValueError):
    """An agent file that cannot be used; the message names the file, the field and the fix."""


MAX_FILE_BYTES = 10_000_000
"""Past this, a file is not an agent file: the run's input must fit in Temporal's 2 MiB payload limit (or external
storage), and a larger read only fills memory."""


Location = tuple[int | str, ...]
"""Where a value sits in the document being validated, as pydantic's error locations say it."""


MAX_TEAM_BYTES = MAX_FILE_BYTES
"""The most JSON a team may make once each sub-agent `file` is read in where it is named: the run's input carries
the whole team, and what is over Temporal's 2 MiB goes to external storage, which holds ten megabytes with ease (as
it does a goal, `DEFAULT_MAX_MESSAGE_CHARS`). Files that name one file several times, each of which does so again,
made a team of millions of agents out of 25 small files."""


def load_agent(path: str | Path) -> AgentSpec:
    """Read and validate an agent file, with the agent files of its sub-agents read into it.

    One pass reads the file and, recursively, its sub-agents' files, each relative path made absolute against the
    directory of the file that wrote it, and each file read once however often it is named; the whole team is then
    validated at once, as one `AgentSpec`, and each problem is reported against the file it is in.
    """
    reader = _Reader()
    data = reader.read(Path(path), chain=()).data
    return _validated(data, _Sources(data, reader.sources))


@dataclasses.dataclass(frozen=True)
class _Read:
    """An agent's data with its sub-agent files read in, and what it will weigh in a run's input."""

    data: dict[str, Any]
    size: int
    """Bytes of JSON, about, with every sub-agent file read in where it is named."""
    agents: int
    """Agents in it, counted as often as they are named."""
    deepest: tuple[str, ...]
    """The names along its longest chain of sub-agents, its own first."""


@dataclasses.dataclass(frozen=True)
class _Level:
    """One agent on the way from the file loaded to the one being read: its file, and its name."""

    file: Path
    name: str


@dataclasses.dataclass
class _Reader:
    """One load's reading of a team's files: each file read once (by resolved path), its result reused wherever the
    team names it again, so a team is measured (`_Read.size`, `deepest`) before anything expands it."""

    done: dict[Path, _Read] = dataclasses.field(default_factory=dict)
    sources: dict[int, str] = dataclasses.field(default_factory=dict)
    """The file each read file's data came from, by the data's `id` (the same dict wherever the file is named)."""

    def read(self, path: Path, *, chain: tuple[_Level, ...]) -> _Read:
        """The agent file `path` as plain data, its sub-agent files read in; `chain` holds the agents that led here,
        so a sub-agent file that leads back to one is caught."""
        resolved = path.resolve()
        if resolved in self.done:
            return self.done[resolved]
        raw = _read_toml(path)
        name = raw.get("name")
        level = _Level(resolved, name if isinstance(name, str) else path.stem)
        read = self._resolved(raw, path, chain=(*chain, level), here=())
        self.sources[id(read.data)] = str(path)
        self.done[resolved] = read
        return read

    def _resolved(self, data: dict[str, Any], path: Path, *, chain: tuple[_Level, ...], here: Location) -> _Read:
        """An agent's data, written in the file `path` (at `here` in it), with its relative paths made absolute and
        its sub-agent files read in. A value of the wrong shape is left as it is, for validation to say what is
        wrong with it."""
        servers, subs = data.get("mcp_servers"), data.get("sub_agents")
        size = _json_bytes({key: value for key, value in data.items() if key != "sub_agents"})
        if isinstance(data.get("output"), dict):
            output = _output_schema_read(data["output"], path, field=".".join(map(str, (*here, "output"))))
            size += _json_bytes(output.get("schema")) if output is not data["output"] else 0
            data = {**data, "output": output}
        if isinstance(servers, list):
            data = {**data, "mcp_servers": [_in_directory(server, path.parent.resolve()) for server in servers]}
        agents = 1
        deepest: tuple[str, ...] = (chain[-1].name,)
        if isinstance(subs, list):
            resolved = []
            for n, sub in enumerate(subs):
                at = (*here, "sub_agents", n)
                one, read = self._sub_agent(path, sub, chain=chain, at=at)
                resolved.append(one)
                if read is None:
                    size += _json_bytes(one)
                    continue
                size += _json_bytes({key: value for key, value in one.items() if key != "spec"}) + read.size
                agents += read.agents
                if len(read.deepest) >= len(deepest):
                    deepest = (chain[-1].name, *read.deepest)
                if size > MAX_TEAM_BYTES:
                    _too_large(path, ".".join(map(str, at)), chain, size, agents)
            data = {**data, "sub_agents": resolved}
        return _Read(data, size, agents, deepest)

    def _sub_agent(self, path: Path, sub: Any, *, chain: tuple[_Level, ...], at: Location) -> tuple[Any, _Read | None]:
        """A sub-agent of the file `path`, its `file` read into `spec` (relative to `path`), or its inline `spec`
        resolved as part of `path`; with what its spec weighs, when it has one."""
        if not isinstance(sub, dict) or "url" in sub:
            return sub, None
        field, file, spec = ".".join(map(str, at)), sub.get("file"), sub.get("spec")
        if file is None:
            if not isinstance(spec, dict):
                return sub, None
            name = spec.get("name", sub.get("name"))
            level = _Level(chain[-1].file, name if isinstance(name, str) else "?")
            _not_too_deep(path, field, (*chain, level), None)
            read = self._resolved(spec, path, chain=(*chain, level), here=(*at, "spec"))
            return {**sub, "spec": read.data}, read
        if spec is not None:
            raise AgentFileError(f"{path}: field `{field}` sets both `file` and `spec`; keep one of them")
        if not isinstance(file, str):
            return sub, None
        target = path.parent / file
        files = [level.file for level in chain]
        if target.resolve() in files:
            cycle = " -> ".join(p.name for p in (*files[files.index(target.resolve()) :], target.resolve()))
            raise AgentFileError(
                f"{path}: field `{field}.file` = {file!r} leads back to an agent that delegates to this one "
                f"({cycle}); sub-agents cannot form a cycle: remove one of these `file` references"
            )
        if not target.is_file():
            raise AgentFileError(
                f"{path}: field `{field}.file`: no agent file {target} "
                "(a sub-agent's `file` is relative to the file that declares it); "
                "fix the path or create the file"
            )
        if target.resolve() not in self.done:
            _not_too_deep(path, field, (*chain, _Level(target.resolve(), target.stem)), None)
        read = self.read(target, chain=chain)
        _not_too_deep(path, field, chain, read.deepest)
        return {**sub, "spec": read.data}, read


def _json_bytes(value: Any) -> int:
    """About how many bytes `value` takes as JSON in a run's input (a TOML date, which is no JSON, as its text)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def _not_too_deep(path: Path, field: str, chain: tuple[_Level, ...], below: tuple[str, ...] | None) -> None:
    """Refuse the sub-agent at `field` of `path` if the agents that lead to it (`chain`, the sub-agent last) and
    those below it (`below`; None when not read yet) are more levels than a team may have: before reading further,
    so a chain of thousands of files is neither read nor recursed into."""
    names = [level.name for level in chain] + list(below or ())
    if len(names) > MAX_AGENT_DEPTH:
        raise AgentFileError(f"{path}: field `{field}`: {too_deep(names, more=below is None)}")


def _too_large(path: Path, field: str, chain: tuple[_Level, ...], size: int, agents: int) -> None:
    via = " > ".join(dict.fromkeys(level.file.name for level in chain))  # a file's inline sub-agents: named once
    raise AgentFileError(
        f"{path}: with each sub-agent `file` read in where it is named, its team is {agents:,} agents and over "
        f"{size // 1_000_000:,} MB of JSON (`{field}` takes it past the limit; reached by {via}); a run's input "
        f"carries the whole team and takes at most {MAX_TEAM_BYTES // 1_000_000} MB: a file that names the same "
        "sub-agent file several times, each of which does so again, multiplies the team; name each file fewer times"
    )


def _output_schema_read(output: dict[str, Any], path: Path, *, field: str) -> dict[str, Any]:
    """`[output]` with its `schema_file` (relative to the agent file `path`) read into `schema`, so a run's input
    carries the schema itself; the file's path is kept, for the record."""
    file = output.get("schema_file")
    if "schema" in output and file is not None:
        raise AgentFileError(f"{path}: field `{field}` sets both `schema` and `schema_file`; keep one of them")
    if not isinstance(file, str):
        return output
    target = path.parent / file
    if not target.is_file():
        raise AgentFileError(
            f"{path}: field `{field}.schema_file`: no JSON file {target} (it is relative to the agent file); "
            "fix the path or create the file"
        )
    try:
        with target.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise AgentFileError(f"{path}: field `{field}.schema_file`: {target} is over 10 MB, no output schema")
        schema = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AgentFileError(
            f"{path}: field `{field}.schema_file`: {target} is not JSON ({err}); write the JSON Schema there as JSON"
        ) from None
    except RecursionError:
        raise AgentFileError(f"{path}: field `{field}.schema_file`: {target} nests too deeply to read") from None
    except OSError as err:
        raise AgentFileError(
            f"{path}: field `{field}.schema_file`: {target} cannot be read ({err.strerror or err})"
        ) from None
    if not isinstance(schema, dict):
        raise AgentFileError(
            f"{path}: field `{field}.schema_file`: {target} holds a JSON {type(schema).__name__}, not a JSON Schema "
            '(a JSON object such as {"type": "object", "properties": {...}})'
        )
    return {**output, "schema": schema}


def _in_directory(server: Any, directory: Path) -> Any:
    """A stdio MCP server runs in its agent file's directory unless it says otherwise, so relative `args` work."""
    if not isinstance(server, dict) or mcp_transport(server) != "stdio":
        return server
    cwd = server.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return server
    return {**server, "cwd": str(PurePath(directory, cwd or "."))}


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML document, or an AgentFileError saying why there is none."""
    nearby = _agent_files_near(path)
    hint = f" Agent files nearby: {', '.join(nearby)}." if nearby else ""
    if not path.exists():
        raise AgentFileError(f"{path}: no such agent file.{hint}")
    if path.is_dir():
        raise AgentFileError(f"{path} is a directory, not an agent file; name a .toml file in it.{hint}")
    if not path.is_file():  # a device or a pipe: reading it may never end (/dev/zero, a FIFO)
        raise AgentFileError(f"{path} is not a regular file; name the agent's .toml file.{hint}")
    try:
        with path.open("rb") as file:
            data_bytes = file.read(MAX_FILE_BYTES + 1)
        if len(data_bytes) > MAX_FILE_BYTES:
            raise AgentFileError(
                f"{path}: over {MAX_FILE_BYTES // 1_000_000} MB, far more than any agent file; name the agent's "
                "own file (long instructions belong in a file of their own, read by a tool)."
            )
        text = data_bytes.decode("utf-8-sig")  # a byte-order mark, as Windows editors write, is not TOML's
    except UnicodeDecodeError as err:
        raise AgentFileError(
            f"{path}: not UTF-8 text (byte {err.start} cannot be decoded); agent files are TOML, which is UTF-8: "
            "save it as UTF-8."
        ) from None
    except OSError as err:
        raise AgentFileError(
            f"{path}: cannot be read ({err.strerror or err}); check the path and its permissions."
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise AgentFileError(f"{path}: not valid TOML ({err}). Fix the syntax at that line.") from None
    except RecursionError:
        data = None
    if data is None or nesting(data) > MAX_NESTING:
        raise AgentFileError(
            f"{path}: tables or lists nest deeper than {MAX_NESTING} levels; no agent setting nests that deep: "
            "flatten the file."
        )
    return data


def _agent_files_near(path: Path) -> list[str]:
    """TOML files beside `path` and in an `agents/` folder there (where the examples live), but not pyproject.toml."""
    base = path if path.is_dir() else path.parent
    folders = [folder for folder in (base, base / "agents") if folder.is_dir()]
    try:
        files = [file for folder in folders for file in folder.glob("*.toml") if file.name != "pyproject.toml"]
    except OSError:  # an unreadable folder has nothing to suggest
        return []
    return sorted(str(file) for file in files)[:10]


def parse_agent(data: dict[str, Any], *, source: str = "<agent>") -> AgentSpec:
    """An agent spec from the data of one agent file (or any mapping), named `source` in its errors; its sub-agents'
    `file` is not read (`load_agent` reads them)."""
    if nesting(data) > MAX_NESTING:
        raise AgentFileError(f"{source}: tables or lists nest deeper than {MAX_NESTING} levels; flatten them.")
    return _validated(data, _Sources(data, {id(data): source}))


@dataclasses.dataclass(frozen=True)
class _Sources:
    """Which file wrote each part of a team's data: `files` names the file of each file's data, by its `id`."""

    data: dict[str, Any]
    files: dict[int, str]

    def in_file(self, loc: Location) -> tuple[str, Location]:
        """The file that wrote the value at `loc` of the whole team's data, and where that file has it: the data is
        walked along `loc`, each file's data met on the way starting that file's part of it."""
        source, start, item = self.files[id(self.data)], 0, cast(Any, self.data)
        for n, part in enumerate(loc):
            try:
                item = item[part]
            except (KeyError, IndexError, TypeError):
                break
            if id(item) in self.files and isinstance(item, dict):
                source, start = self.files[id(item)], n + 1
        return source, loc[start:]


def _validated(data: dict[str, Any], sources: _Sources) -> AgentSpec:
    """`data` validated as one spec; each problem is told against the file its value came from (`sources`).

    Validated strictly first: pydantic otherwise reads a number or boolean written as a string (`max_seconds = "10"`,
    `thrash_guard = "yes"`) as what it says, and TOML has numbers and booleans, so quotes are a mistake. What only
    strictness refuses besides (`max_steps = 3.0`) is read as before. Only agent files are held to it: a client's JSON
    input (another SDK's, an older release's, a run's in flight) is read as it always was."""
    try:
        try:
            return AgentSpec.model_validate(data, strict=True)
        except ValidationError as strict:
            quoted = [item for item in strict.errors() if _is_quoted(item)]
        spec = AgentSpec.model_validate(data)
    except ValidationError as err:
        raise AgentFileError("\n".join(_described(sources, item) for item in err.errors())) from None
    except RecursionError:
        raise AgentFileError(
            f"{sources.files[id(data)]}: nests too deeply to read; flatten its tables and lists."
        ) from None
    if quoted:
        raise AgentFileError("\n".join(_described(sources, item) for item in quoted))
    return spec


_QUOTED_TYPES = {"int_type": "a whole number", "float_type": "a number", "bool_type": "`true` or `false`"}


def _is_quoted(item: Any) -> bool:
    """Whether a strict validation error is a number or boolean written as a string."""
    return item["type"] in _QUOTED_TYPES and isinstance(item.get("input"), str)


def _described(sources: _Sources, item: Any) -> str:
    """One validation problem, told against the file that holds it and at its place in that file."""
    source, loc = sources.in_file(tuple(item["loc"]))
    return _describe(source, {**item, "loc": loc})


def _describe(source: str, item: Any) -> str:
    loc = [str(part) for part in item["loc"]]
    field = ".".join(loc) or "(top level)"
    kind = item["type"]
    if _is_quoted(item):
        value = item["input"].strip()
        fix = (
            f"drop the quotes: `{loc[-1]} = {value}`"
            if _unquoted_fits(value, kind)
            else f"write {_QUOTED_TYPES[kind]}, without quotes"
        )
        return (
            f"{source}: field `{field}` is the string {_shown(item['input'])}, not {_QUOTED_TYPES[kind]}; "
            f"TOML writes numbers and booleans without quotes: {fix}"
        )
    if kind == "extra_forbidden":
        model = _model_at(AgentSpec, tuple(item["loc"][:-1]))
        known = sorted(_field_names(model)) if model else []
        close = difflib.get_close_matches(loc[-1], known, n=1)
        if close:
            fix = f"did you mean `{close[0]}`?"
        elif known:
            fix = f"known fields here: {', '.join(known)}"
        else:
            fix = "remove it or fix its name"
        return f"{source}: field `{field}` is not an agent setting; {fix}"
    if kind == "missing":
        return f'{source}: field `{field}` is required; add it, e.g. `{loc[-1]} = "..."`'
    allowed = _range_of(tuple(item["loc"])) if kind in _RANGE_ERRORS or kind.startswith(("int_", "float_")) else None
    if allowed:
        problem = "out of range" if kind in _RANGE_ERRORS else item["msg"]
        return f"{source}: field `{field}`: {problem} (got {_shown(item.get('input'))}); use {allowed}"
    return f"{source}: field `{field}`: {item['msg']} (got {_shown(item.get('input'))}); fix the value"


def _unquoted_fits(value: str, kind: str) -> bool:
    """Whether `value`, unquoted, is what the field takes: `10` for a number, `true` for a boolean."""
    if kind == "bool_type":
        return value in ("true", "false")
    try:
        return math.isfinite(float(value)) and (kind == "float_type" or float(value).is_integer())
    except ValueError:
        return False


_RANGE_ERRORS = {"finite_number", "greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _range_of(loc: tuple[int | str, ...]) -> str | None:
    """`a finite number above 0 and at most 315,360,000`: the range the field at `loc` accepts, if it has one."""
    model = _model_at(AgentSpec, loc[:-1])
    info = _field_names(model).get(str(loc[-1])) if model else None
    if info is None:
        return None
    bounds = []
    for meta in info.metadata:
        for attr, words in (("gt", "above"), ("ge", "at least"), ("lt", "below"), ("le", "at most")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                bounds.append(f"{words} {bound:,}")
    if not bounds:
        return None
    whole = get_args(info.annotation) or (info.annotation,)
    kind = "a whole number" if int in whole or info.annotation is int else "a finite number"
    return f"{kind} {' and '.join(bounds)}"


def _field_names(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by the name an agent file uses for them: the alias when there is one.

    A contract is built on first use (contracts/model.py), so a field that names a model defined after its own
    (`SubAgent.spec`, an `AgentSpec`) is still a forward reference until its model is rebuilt here."""
    if not model.__pydantic_fields_complete__:
        model.model_rebuild()
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _model_at(annotation: Any, loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model that an error location such as `sub_agents.0.spec.scripted.0` points into, if any.

    Steps through fields, list indexes and dict keys; `X | None` is stepped over, and the tag in the
    location (e.g. `stdio` in `mcp_servers.0.stdio`) picks the member of a tagged union.
    """
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _model_at(args[0], loc)
    if origin in (Union, types.UnionType):
        members = [member for member in args if member is not type(None)]
        if len(members) == 1:
            return _model_at(members[0], loc)
        chosen = [member for member in members if loc and _union_tag(member) == loc[0]]
        return _model_at(chosen[0], loc[1:]) if chosen else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not loc:
            return annotation
        info = _field_names(annotation).get(str(loc[0]))
        return _model_at(info.annotation, loc[1:]) if info else None
    if loc and isinstance(origin, type) and issubclass(origin, Mapping) and len(args) == 2:
        return _model_at(args[1], loc[1:])
    if loc and isinstance(loc[0], int) and isinstance(origin, type) and issubclass(origin, Sequence) and args:
        return _model_at(args[0], loc[1:])
    return None


def _union_tag(member: Any) -> str | None:
    """How an error location names a member of a union: its `Tag`, else its class name."""
    if get_origin(member) is Annotated:
        tags = [meta.tag for meta in get_args(member)[1:] if isinstance(meta, Tag)]
        return tags[0] if tags else _union_tag(get_args(member)[0])
    return getattr(member, "__name__", None)


def check_agent(path: str | Path) -> AgentSpec:
    """`load_agent`, then what `stalwart check` can also know without a worker: refused with every problem found.

    A provider no worker knows, and environment variables a worker here would not let the file read
    (the worker decides for itself: its `STALWART_ALLOWED_ENV` or `allowed_env` may differ from this shell's).
    """
    spec = load_agent(path)
    problems = static_problems(spec, source=str(path))
    if problems:
        raise AgentFileError("\n".join(problems))
    return spec


def static_problems(spec: AgentSpec, *, source: str, where: str = "") -> list[str]:
    """What is wrong with a valid spec that only a worker would otherwise find, for it and its inline sub-agents."""
    problems: list[str] = []
    prefix = spec.model.partition(":")[0]
    if prefix not in BUILTIN_PROVIDERS:
        problems.append(
            f"{source}: field `{where}model` = {spec.model!r} names provider {prefix!r}, which no worker knows; "
            f"use one of {', '.join(BUILTIN_PROVIDERS)} (as `provider:model-name`)"
        )
    key_problem = secrets.model_key_problem(spec.model, spec.api_key_env, spec.base_url, "it")
    if key_problem is not None:  # a provider's own key goes only to its provider's API
        problems.append(f"{source}: field `{where}{'api_key_env' if spec.api_key_env else 'base_url'}`: {key_problem}")
    names: list[tuple[str, str]] = []
    for n, server in enumerate(spec.mcp_servers):
        values = server.env if isinstance(server, McpStdioServer) else server.headers
        kind = "env" if isinstance(server, McpStdioServer) else "headers"
        for key, value in values.items():
            names += [(f"{where}mcp_servers.{n}.{kind}.{key}", name) for name in ENV_REFERENCE.findall(value)]
    for n, sub in enumerate(spec.sub_agents):
        if sub.auth_token_env:
            names.append((f"{where}sub_agents.{n}.auth_token_env", sub.auth_token_env))
        if sub.spec is not None:
            problems += static_problems(sub.spec, source=source, where=f"{where}sub_agents.{n}.spec.")
    unknown = unknown_tool_names(spec)
    if unknown is not None:
        problems.append(f"{source}: {where}{unknown}")
    problems += [f"{source}: {problem}" for problem in binding_problems(spec, where=where)]
    for field, name in names:
        problem = secrets.env_problem(name, "it")
        if problem is not None:
            problems.append(f"{source}: field `{field}`: {problem}")
    return problems
