"""Agent files: TOML documents that describe an `AgentSpec`.

Every problem is reported with the file, the field and what to do about it.
"""

from __future__ import annotations

import difflib
import json
import tomllib
import types
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError
from pydantic.fields import FieldInfo

from stalwart.activities import secrets
from stalwart.contracts.agent import (
    BUILTIN_PROVIDERS,
    ENV_REFERENCE,
    MAX_NESTING,
    AgentSpec,
    McpStdioServer,
    mcp_transport,
    nesting,
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


def load_agent(path: str | Path) -> AgentSpec:
    """Read and validate an agent file, with the agent files of its sub-agents read into it.

    One pass reads the file and, recursively, its sub-agents' files, each relative path made absolute against the
    directory of the file that wrote it; the whole team is then validated at once, as one `AgentSpec`, and each
    problem is reported against the file it is in.
    """
    files: dict[Location, str] = {}
    data = _read_agent(Path(path), chain=(), at=(), files=files)
    return _validated(data, files)


def _read_agent(path: Path, *, chain: tuple[Path, ...], at: Location, files: dict[Location, str]) -> dict[str, Any]:
    """The agent file `path` as plain data, its sub-agent files read in; `files` learns that the spec at `at` is
    this file's. `chain` holds the files that led here, so a sub-agent file that leads back to one is caught."""
    files[at] = str(path)
    return _resolved(_read_toml(path), path, chain=(*chain, path.resolve()), at=at, files=files)


def _resolved(
    data: dict[str, Any], path: Path, *, chain: tuple[Path, ...], at: Location, files: dict[Location, str]
) -> dict[str, Any]:
    """An agent's data, written in the file `path`, with its relative paths made absolute and its sub-agent files
    read in. A value of the wrong shape is left as it is, for validation to say what is wrong with it."""
    servers, subs = data.get("mcp_servers"), data.get("sub_agents")
    if isinstance(data.get("output"), dict):
        _, here = _in_file(files, (*at, "output"))
        data = {**data, "output": _output_schema_read(data["output"], path, field=".".join(map(str, here)))}
    if isinstance(servers, list):
        data = {**data, "mcp_servers": [_in_directory(server, path.parent.resolve()) for server in servers]}
    if isinstance(subs, list):
        data = {
            **data,
            "sub_agents": [
                _sub_agent(path, n, sub, chain=chain, at=(*at, "sub_agents", n), files=files)
                for n, sub in enumerate(subs)
            ],
        }
    return data


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


def _sub_agent(
    path: Path, n: int, sub: Any, *, chain: tuple[Path, ...], at: Location, files: dict[Location, str]
) -> Any:
    """A sub-agent of the file `path`, its `file` read into `spec` (relative to `path`), or its inline `spec`
    resolved as part of `path`."""
    if not isinstance(sub, dict) or "url" in sub:
        return sub
    field, file, spec = f"sub_agents.{n}", sub.get("file"), sub.get("spec")
    if file is None:
        if not isinstance(spec, dict):
            return sub
        return {**sub, "spec": _resolved(spec, path, chain=chain, at=(*at, "spec"), files=files)}
    if spec is not None:
        raise AgentFileError(f"{path}: field `{field}` sets both `file` and `spec`; keep one of them")
    if not isinstance(file, str):
        return sub
    target = path.parent / file
    if target.resolve() in chain:
        cycle = " -> ".join(p.name for p in (*chain[chain.index(target.resolve()) :], target.resolve()))
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
    return {**sub, "spec": _read_agent(target, chain=chain, at=(*at, "spec"), files=files)}


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
    return _validated(data, {(): source})


def _validated(data: dict[str, Any], files: dict[Location, str]) -> AgentSpec:
    """`data` validated as one spec; each problem is told against the file its value came from (`files`)."""
    try:
        return AgentSpec.model_validate(data)
    except ValidationError as err:
        raise AgentFileError("\n".join(_described(files, item) for item in err.errors())) from None
    except RecursionError:
        raise AgentFileError(f"{files[()]}: nests too deeply to read; flatten its tables and lists.") from None


def _described(files: dict[Location, str], item: Any) -> str:
    """One validation problem, told against the file that holds it and at its place in that file."""
    source, loc = _in_file(files, tuple(item["loc"]))
    return _describe(source, {**item, "loc": loc})


def _in_file(files: dict[Location, str], loc: Location) -> tuple[str, Location]:
    """The file that wrote the value at `loc` of the whole team's document, and where that file has it."""
    start = max((at for at in files if loc[: len(at)] == at), key=len)
    return files[start], loc[len(start) :]


def _describe(source: str, item: Any) -> str:
    loc = [str(part) for part in item["loc"]]
    field = ".".join(loc) or "(top level)"
    kind = item["type"]
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
    for field, name in names:
        problem = secrets.env_problem(name, "it")
        if problem is not None:
            problems.append(f"{source}: field `{field}`: {problem}")
    return problems
