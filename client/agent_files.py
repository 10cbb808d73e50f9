"""Agent files: TOML documents that describe an `AgentSpec`.

Every problem is reported with the file, the field and what to do about it.
"""

from __future__ import annotations

import difflib
import tomllib
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError
from pydantic.fields import FieldInfo

from stalwart.contracts.agent import AgentSpec, SubAgent


class AgentFileError(ValueError):
    """An agent file that cannot be used; the message names the file, the field and the fix."""


def load_agent(path: str | Path) -> AgentSpec:
    """Read and validate an agent file, with the agent files of its sub-agents read into it."""
    return _load(Path(path), chain=())


def _load(path: Path, chain: tuple[Path, ...]) -> AgentSpec:
    """`chain` holds the files that led here, so a sub-agent file that leads back to one of them is caught."""
    if not path.exists():
        nearby = _agent_files_near(path)
        hint = f" Agent files nearby: {', '.join(nearby)}." if nearby else ""
        raise AgentFileError(f"{path}: no such agent file.{hint}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise AgentFileError(f"{path}: not valid TOML ({err}). Fix the syntax at that line.") from None
    # A stdio MCP server runs in the agent file's directory unless it says otherwise, so relative `args` work.
    spec = parse_agent(data, source=str(path)).with_base_dir(path.parent.resolve())
    return _with_sub_agent_files(spec, path, (*chain, path.resolve()))


def _agent_files_near(path: Path) -> list[str]:
    """TOML files beside `path` and in an `agents/` folder there (where the examples live), but not pyproject.toml."""
    folders = [folder for folder in (path.parent, path.parent / "agents") if folder.is_dir()]
    return sorted(str(file) for folder in folders for file in folder.glob("*.toml") if file.name != "pyproject.toml")


def _with_sub_agent_files(spec: AgentSpec, path: Path, chain: tuple[Path, ...]) -> AgentSpec:
    if not spec.sub_agents:
        return spec
    return spec.model_copy(
        update={"sub_agents": [_resolve(path, n, sub, chain) for n, sub in enumerate(spec.sub_agents)]}
    )


def _resolve(path: Path, n: int, sub: SubAgent, chain: tuple[Path, ...]) -> SubAgent:
    """A sub-agent with its `file` read into `spec`, relative to the declaring file `path`."""
    field = f"sub_agents.{n}"
    if sub.file is None:
        if sub.spec is None:
            return sub
        inline = sub.spec.with_base_dir(path.parent.resolve())
        return sub.model_copy(update={"spec": _with_sub_agent_files(inline, path, chain)})
    if sub.spec is not None:
        raise AgentFileError(f"{path}: field `{field}` sets both `file` and `spec`; keep one of them")
    target = path.parent / sub.file
    if target.resolve() in chain:
        cycle = " -> ".join(p.name for p in (*chain[chain.index(target.resolve()) :], target.resolve()))
        raise AgentFileError(
            f"{path}: field `{field}.file` = {sub.file!r} leads back to an agent that delegates to this one "
            f"({cycle}); sub-agents cannot form a cycle: remove one of these `file` references"
        )
    if not target.exists():
        raise AgentFileError(
            f"{path}: field `{field}.file`: no agent file {target} "
            "(a sub-agent's `file` is relative to the file that declares it); "
            "fix the path or create the file"
        )
    return sub.model_copy(update={"spec": _load(target, chain)})


def parse_agent(data: dict[str, Any], *, source: str = "<agent>") -> AgentSpec:
    try:
        return AgentSpec.model_validate(data)
    except ValidationError as err:
        raise AgentFileError("\n".join(_describe(source, item) for item in err.errors())) from None


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
    return f"{source}: field `{field}`: {item['msg']} (got {item.get('input')!r}); fix the value"


def _field_names(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by the name an agent file uses for them: the alias when there is one."""
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
