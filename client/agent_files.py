"""Agent files: TOML documents that describe an `AgentSpec`.

Every problem is reported with the file, the field and what to do about it.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contracts.agent import AgentSpec, Budgets, McpHttpServer, McpStdioServer, ScriptedReply

_KNOWN_FIELDS = {
    "": set(AgentSpec.model_fields),
    "budgets": set(Budgets.model_fields),
    "scripted": set(ScriptedReply.model_fields),
    "mcp_servers.stdio": set(McpStdioServer.model_fields),
    "mcp_servers.http": set(McpHttpServer.model_fields),
}


class AgentFileError(ValueError):
    """An agent file that cannot be used; the message names the file, the field and the fix."""


def load_agent(path: str | Path) -> AgentSpec:
    """Read and validate an agent file."""
    path = Path(path)
    if not path.exists():
        nearby = sorted(p.name for p in path.parent.glob("*.toml")) if path.parent.exists() else []
        hint = f" Agent files in {path.parent}: {', '.join(nearby)}." if nearby else ""
        raise AgentFileError(f"{path}: no such agent file.{hint}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise AgentFileError(f"{path}: not valid TOML ({err}). Fix the syntax at that line.") from None
    # A stdio MCP server runs in the agent file's directory unless it says otherwise, so relative `args` work.
    return parse_agent(data, source=str(path)).with_base_dir(path.parent.resolve())


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
        section = "scripted" if loc[:1] == ["scripted"] else ".".join(p for p in loc[:-1] if not p.isdigit())
        known = _KNOWN_FIELDS.get(section, set())
        close = difflib.get_close_matches(loc[-1], known, n=1)
        fix = f"did you mean `{close[0]}`?" if close else f"known fields here: {', '.join(sorted(known))}"
        return f"{source}: field `{field}` is not an agent setting; {fix}"
    if kind == "missing":
        return f"{source}: field `{field}` is required; add it, e.g. `{loc[-1]} = \"...\"`"
    return f"{source}: field `{field}`: {item['msg']} (got {item.get('input')!r}); fix the value"
