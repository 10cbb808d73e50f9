"""Tools that ship with Stalwart: safe enough to enable anywhere.

`http_get` and `read_file` reach outside the worker, so they do nothing until
the worker opts in: `STALWART_HTTP_ALLOWED_HOSTS` (or `http_get_tool(...)`)
lists the hosts `http_get` may fetch, and `STALWART_FILES_ROOT` (or
`read_file_tool(...)`) names the one directory `read_file` may read.
"""

from __future__ import annotations

import ast
import asyncio
import math
import operator
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from stalwart.activities.tools.registry import Tool, tool
from stalwart.contracts.errors import UsageError

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "log": math.log,
    "exp": math.exp,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_MAX_EXPONENT = 10_000
_MAX_INT_BITS = 14_000
"""About 4,200 decimal digits: Python prints no longer integer (`sys.get_int_max_str_digits`), so no longer result
could be returned. Checked before each product and power, whose cost grows with its operands' sizes: a small
expression such as `(9**9999)**9999` would otherwise hold the worker's CPU (and its GIL, so every other
activity and heartbeat of the worker) for minutes."""


def _refuse_huge(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse an integer product or power whose result would be over `_MAX_INT_BITS`, before computing it."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # float arithmetic is bounded: it overflows to an error or inf
    if isinstance(op, ast.Mult):
        bits = left.bit_length() + right.bit_length()
    elif isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        bits = int(right * math.log2(abs(left)))
    else:
        return
    if bits > _MAX_INT_BITS:
        raise ValueError(
            f"the result of an integer {'product' if isinstance(op, ast.Mult) else 'power'} would have about "
            f"{bits * math.log10(2):,.0f} digits, over the limit of {_MAX_INT_BITS * math.log10(2):,.0f}; work with "
            "floats (write 9.0 instead of 9) or with logarithms (log)"
        )


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large (limit {_MAX_EXPONENT})")
        _refuse_huge(node.op, left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    allowed = "numbers, + - * / // % **, parentheses, " + ", ".join(sorted(_FUNCTIONS)) + ", pi, e"
    raise ValueError(f"unsupported expression {ast.unparse(node)!r}; use only {allowed}")


INLINE_MAX_CHARS = 100
"""The longest expression the calculator works out on the worker's event loop itself, not in a thread: tens of
microseconds as models write them, about a millisecond at worst (big-integer divisions up to the limits above),
where handing it to a thread and back costs 0.1 to 0.25 ms of every fast tool call. A longer one may take several
milliseconds, and goes to a thread as any plain-function tool does, so the loop's other work does not wait."""


@tool(fast=True)  # microseconds of pure arithmetic: a full activity round trip would cost far more than the call
async def calculator(expression: str) -> float | int:
    """Evaluate an arithmetic expression exactly as written, without running any code.

    Args:
        expression: Arithmetic such as "(17 * 23) + 4" or "sqrt(2) * pi".
    """
    if len(expression) > INLINE_MAX_CHARS:
        return await asyncio.to_thread(_calculate, expression)
    return _calculate(expression)


def _calculate(expression: str) -> float | int:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not an arithmetic expression: {err.msg}") from None
    try:
        return _evaluate(tree)
    except OverflowError:
        raise ValueError("the result is too large for a float; work with logarithms (log) instead") from None


@tool
async def echo(text: str) -> str:  # async: nothing here blocks, so it need not wait for a thread
    """Return the text unchanged; useful to check that tool calling works.

    Args:
        text: The text to echo back.
    """
    return text


class NotAllowed(UsageError, PermissionError):
    """The worker's settings forbid this; the model cannot fix it by changing its arguments."""

    hint = "This worker does not permit it: tell the user which setting would allow it, or work without it."


HTTP_HOSTS_ENV = "STALWART_HTTP_ALLOWED_HOSTS"
HTTP_MAX_BYTES_ENV = "STALWART_HTTP_MAX_BYTES"
FILES_ROOT_ENV = "STALWART_FILES_ROOT"
FILES_MAX_BYTES_ENV = "STALWART_FILES_MAX_BYTES"
DEFAULT_MAX_BYTES = 200_000
"""Tool results enter the run's history; Temporal rejects payloads over 2 MiB, so fetches are capped well below."""
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class HttpPolicy:
    """Which hosts `http_get` may fetch, and how much of a body it returns.

    A host entry matches that host exactly; `*.example.com` matches its
    subdomains. Every redirect is checked against the same list.
    """

    allowed_hosts: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_seconds: float = 30.0
    setting: str = HTTP_HOSTS_ENV
    """Where the allowlist comes from, named in refusals so the user knows what to change."""

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        allowed_hosts: Sequence[str] | None = None,
        max_bytes: int | None = None,
    ) -> HttpPolicy:
        """The policy from `allowed_hosts` and `max_bytes`; the environment is read only for the ones not given."""
        environ = os.environ if environ is None else environ
        if allowed_hosts is None:
            hosts, setting = _hosts(environ.get(HTTP_HOSTS_ENV, "").split(",")), HTTP_HOSTS_ENV
        else:
            hosts, setting = _hosts(allowed_hosts), "the worker's http_get_tool(allowed_hosts=...)"
        if max_bytes is None:
            max_bytes = _int_setting(environ, HTTP_MAX_BYTES_ENV)
        elif max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        return cls(allowed_hosts=hosts, max_bytes=max_bytes, setting=setting)

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(
            host == entry or (entry.startswith("*.") and host.endswith(entry[1:])) for entry in self.allowed_hosts
        )

    def check(self, url: httpx.URL, *, redirected: bool = False) -> None:
        if url.scheme not in ("http", "https"):
            raise ValueError(f"cannot fetch {url}: only http:// and https:// URLs are supported")
        if not self.allowed_hosts:
            raise NotAllowed(
                f"http_get is off on this worker; set {self.setting} to the hosts it may fetch "
                "(e.g. example.com,*.python.org)"
            )
        if not self.allows(url.host):
            what = "redirected to host" if redirected else "host"
            raise NotAllowed(
                f"{what} {url.host} is not allowed; add it to {self.setting} "
                f"(allowed now: {', '.join(self.allowed_hosts)})"
            )


async def fetch(url: str, policy: HttpPolicy) -> dict[str, Any]:
    """GET `url`, following at most MAX_REDIRECTS redirects, each one checked against the policy."""
    current = httpx.URL(url)
    async with httpx.AsyncClient(follow_redirects=False, timeout=policy.timeout_seconds) as client:
        for hop in range(MAX_REDIRECTS + 1):
            policy.check(current, redirected=hop > 0)
            async with client.stream("GET", current) as response:
                if response.is_redirect:
                    current = response.url.join(response.headers["location"])
                    continue
                body, truncated = await _read_capped(response.aiter_bytes(), policy.max_bytes)
                return {
                    "url": str(response.url),
                    "status": response.status_code,
                    "content_type": response.headers.get("content-type", ""),
                    "content": _text(body, response.charset_encoding or "utf-8"),
                    "truncated": truncated,
                }
    raise ValueError(f"{url} redirected more than {MAX_REDIRECTS} times; fetch the final URL directly")


def http_get_tool(allowed_hosts: tuple[str, ...] | None = None, *, max_bytes: int | None = None) -> Tool:
    """An `http_get` tool with the worker's own allowlist and cap; what is not given is read from
    STALWART_HTTP_ALLOWED_HOSTS and STALWART_HTTP_MAX_BYTES at each call."""
    fixed: HttpPolicy | None = None
    if allowed_hosts is not None and max_bytes is not None:  # nothing is left to read from the environment
        fixed = HttpPolicy.from_env({}, allowed_hosts=allowed_hosts, max_bytes=max_bytes)

    async def http_get(url: str) -> dict[str, Any]:
        """Fetch a web page or API response with an HTTP GET, from the hosts this worker allows.

        Args:
            url: The full http:// or https:// URL to fetch.
        """
        policy = fixed or HttpPolicy.from_env(allowed_hosts=allowed_hosts, max_bytes=max_bytes)
        return await fetch(url, policy)

    return tool(http_get)


def read_file_tool(root: str | Path | None = None, *, max_bytes: int | None = None) -> Tool:
    """A `read_file` tool confined to `root`; without one it reads STALWART_FILES_ROOT at each call."""

    def read_file(path: str) -> dict[str, Any]:
        """Read a text file from the directory this worker shares with agents.

        Args:
            path: The file's path relative to that directory, e.g. "notes/plan.md".
        """
        base = root if root is not None else os.environ.get(FILES_ROOT_ENV)
        if not base:
            raise NotAllowed(f"read_file is off on this worker; set {FILES_ROOT_ENV} to the directory agents may read")
        target = confined(Path(base), path)
        limit = max_bytes or _int_setting(os.environ, FILES_MAX_BYTES_ENV)
        with target.open("rb") as handle:
            body = handle.read(limit + 1)
        if b"\0" in body[:8192]:
            raise ValueError(f"{path} is a binary file; read_file returns text only")
        return {"path": path, "content": body[:limit].decode("utf-8", errors="replace"), "truncated": len(body) > limit}

    return tool(read_file)


def confined(root: Path, path: str) -> Path:
    """`path` inside `root`, with symlinks resolved; anything that leaves `root` is refused."""
    try:
        base = root.resolve(strict=True)
    except OSError as err:
        raise NotAllowed(f"the readable directory {root} does not exist; fix {FILES_ROOT_ENV} on the worker") from err
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        raise NotAllowed(
            f"{path} is outside the readable directory; give a path inside it, without '..' or links that leave it"
        )
    if not target.is_file():
        raise FileNotFoundError(f"no file {path} in the readable directory")
    return target


http_get = http_get_tool()
read_file = read_file_tool()


async def _read_capped(chunks: Any, limit: int) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False


def _text(body: bytes, encoding: str) -> str:
    if b"\0" in body[:8192]:
        return f"[binary content, {len(body)} bytes, not shown]"
    try:
        return body.decode(encoding, errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def _hosts(entries: Iterable[str]) -> tuple[str, ...]:
    return tuple(h.strip().lower() for h in entries if h.strip())


def _int_setting(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name)
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number of bytes; set it to e.g. {DEFAULT_MAX_BYTES}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1")
    return value
