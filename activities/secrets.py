"""The worker's secrets: which environment variables an agent file may read, and redaction of their values.

Agent files are often written by someone other than whoever runs the worker, yet they name
environment variables (`api_key_env`, `${NAME}` in MCP headers and env, `auth_token_env`) that the
worker reads and sends to a URL the file chooses. So a worker reads only the variables it allows:
the provider key variables, any `STALWART_*`, the names (or `PREFIX_*` patterns) listed in
`STALWART_ALLOWED_ENV`, and those its `StalwartPlugin(allowed_env=...)` adds. Anything else is
refused by name, with the way to allow it.

Every value read that way is remembered, and `redact` replaces it (whatever its shape) wherever text
leaves an activity: `activities/redacting.py` applies it to every activity's errors, results and
heartbeats (the streamed answer), and to the worker process's log records.
Values shorter than `MIN_SECRET_CHARS` are not redacted: they would match ordinary words.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from stalwart.contracts.errors import UsageError

ALLOWED_ENV_VAR = "STALWART_ALLOWED_ENV"
"""Comma-separated names (or `PREFIX_*` patterns) of further variables agent files may read."""
PROVIDER_KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
ALLOWED_PREFIX = "STALWART_"
REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6

_lock = threading.Lock()
_values: frozenset[str] = frozenset()
_by_length: tuple[str, ...] = ()
_allowed_by_workers: Counter[str] = Counter()


class EnvNotAllowed(UsageError, ValueError):
    """An agent file names an environment variable the worker does not let agent files read."""


# -- which variables ----------------------------------------------------------------------------------------------


def allowed_patterns(environ: Mapping[str, str] | None = None) -> list[str]:
    """What agent files may read here: the defaults, `STALWART_ALLOWED_ENV`, and what running workers added."""
    environ = os.environ if environ is None else environ
    listed = [name.strip() for name in environ.get(ALLOWED_ENV_VAR, "").split(",") if name.strip()]
    return [*PROVIDER_KEY_VARS, f"{ALLOWED_PREFIX}*", *listed, *sorted(_allowed_by_workers)]


def env_allowed(name: str, environ: Mapping[str, str] | None = None) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed_patterns(environ))


def refusal(name: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """Why `name` may not be read, and the two ways to fix it."""
    allowed = ", ".join(allowed_patterns(environ))
    return (
        f"{where} names the environment variable {name}, which the worker does not let agent files read "
        f"(allowed: {allowed}). Rename it to {ALLOWED_PREFIX}{name}, or let the worker read it: "
        f"{ALLOWED_ENV_VAR}={name} in the worker's environment, or StalwartPlugin(allowed_env=[{name!r}])."
    )


def check_env(name: str, where: str, environ: Mapping[str, str] | None = None) -> None:
    if not env_allowed(name, environ):
        raise EnvNotAllowed(refusal(name, where, environ))


def read_env(name: str, where: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of an allowed variable (None when unset), remembered as a secret; EnvNotAllowed otherwise."""
    environ = os.environ if environ is None else environ
    check_env(name, where, environ)
    value = environ.get(name)
    if value is not None:
        remember(value)
    return value


@contextlib.contextmanager
def allowing(names: Iterable[str]) -> Iterator[None]:
    """Let agent files read these variables too while a worker runs (`StalwartPlugin(allowed_env=...)`)."""
    names = list(names)
    with _lock:
        _allowed_by_workers.update(names)
    try:
        yield
    finally:
        with _lock:
            _allowed_by_workers.subtract(names)
            for name in [name for name, count in _allowed_by_workers.items() if count <= 0]:
                del _allowed_by_workers[name]


# -- redaction ----------------------------------------------------------------------------------------------------


def remember(value: str) -> None:
    """Treat `value` as a secret from now on (each line of it too, for values that hold several)."""
    global _values, _by_length
    parts = {part.strip() for part in [value, *value.splitlines()]}
    parts = {part for part in parts if len(part) >= MIN_SECRET_CHARS} - _values
    if not parts:
        return
    with _lock:
        _values = _values | parts
        _by_length = tuple(sorted(_values, key=len, reverse=True))


def known() -> bool:
    return bool(_by_length)


def redact(text: str, *, partial_tail: bool = False) -> str:
    """`text` with every secret value replaced by `[redacted]`.

    With `partial_tail` (text that is still streaming), an ending that could be the start of a
    secret is held back too, so a key split across two chunks is never shown in part.
    """
    for secret in _by_length:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if partial_tail and text:
        for secret in _by_length:
            for length in range(min(len(secret) - 1, len(text)), 0, -1):
                if text.endswith(secret[:length]):
                    text = text[:-length]
                    break
    return text


def contains_secret(text: str) -> bool:
    return any(secret in text for secret in _by_length)


def redact_value(value: Any, *, partial_tail: bool = False) -> Any:
    """`value` (strings, containers, pydantic models, dataclass-free plain data) with every string redacted."""
    if not _by_length:
        return value
    if isinstance(value, str):
        return redact(value, partial_tail=partial_tail)
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="python", by_alias=True)
        cleaned = redact_value(dumped, partial_tail=partial_tail)
        return value if cleaned == dumped else type(value).model_validate(cleaned)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v, partial_tail=partial_tail) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v, partial_tail=partial_tail) for v in value)
    return value


def _error_texts(err: BaseException) -> Iterator[str]:
    """Every message and detail of an error and the errors chained to it."""
    from temporalio.exceptions import ApplicationError  # here: `stalwart check` reads the policy without the SDK

    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield str(current)
        if isinstance(current, ApplicationError):
            yield repr(current.details)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def redacted_error(err: BaseException) -> BaseException:
    """`err` itself when it carries no secret; else an ApplicationError with the same retry behaviour, redacted.

    The replacement drops the chained causes: Temporal records them in history with their messages.
    """
    if not _by_length or not any(contains_secret(text) for text in _error_texts(err)):
        return err
    from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

    if isinstance(err, ApplicationError):
        return ApplicationError(
            redact(err.message),
            *redact_value(list(err.details)),
            type=err.type,
            non_retryable=err.non_retryable,
            next_retry_delay=err.next_retry_delay,
            category=err.category,
        )
    return ApplicationError(redact(str(err)), type=type(err).__name__, category=ApplicationErrorCategory.UNSPECIFIED)
