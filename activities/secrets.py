"""The worker's secrets: which environment variables an agent file may read, and redaction of their values.

Agent files are often written by someone other than whoever runs the worker, yet they name environment
variables (`api_key_env`, `auth_token_env`, `${NAME}` in an MCP server's `headers` and `env`) whose values
the worker sends to a URL or a command of the file's choosing. So three rules decide what a name may read,
in this order, at `stalwart check` and again in the worker when it reads the variable (a run started
without `check` is refused the same way):

1. A provider key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) is read only as the key of a model of its own
   provider (`api_key_env` of an `openai:`/`openai-responses:` or `anthropic:` model, or no `api_key_env`
   at all): never for an MCP header or env, a remote agent's token, or another provider's model.
   Nor is it sent to a `base_url` other than the provider's API (`PROVIDER_HOSTS`) or this machine.
2. The worker's own settings (`activities/worker_settings.py`: encryption keys, storage and Temporal
   credentials, tokens, `TEMPORAL_*`, `AWS_*`, `OTEL_*`, ...) are never read, whatever the allowlist says.
3. Anything else is read only when agent files may read it: `STALWART_AGENT_*`, the namespace kept for
   them; the names (or `PREFIX_*` patterns) listed in `STALWART_ALLOWED_ENV`, and those a worker's
   `StalwartPlugin(allowed_env=...)` adds. Other `STALWART_*` names stay readable as before (none of
   them is a setting, by rule 2), but `STALWART_AGENT_*` is where new ones belong.

A refusal names the variable, the field that named it, and what to do instead (docs/secrets.md).

Every value read that way is remembered, and so are, from the worker's start, every provider key and
secret setting in its environment and every variable agent files may read: `redact` replaces them
(whatever their shape) wherever text leaves an activity. `activities/redacting.py` applies it to every
activity's errors, results and heartbeats (the streamed answer), and to the worker process's log
records. Values shorter than `MIN_SECRET_CHARS` are not redacted: they would match ordinary words.
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import os
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from stalwart.activities import worker_settings
from stalwart.activities.exception_chain import exception_chain
from stalwart.contracts.errors import UsageError

ALLOWED_ENV_VAR = "STALWART_ALLOWED_ENV"
"""Comma-separated names (or `PREFIX_*` patterns) of further variables agent files may read."""
PROVIDER_KEYS: Mapping[str, tuple[str, ...]] = {
    "OPENAI_API_KEY": ("openai", "openai-responses"),
    "ANTHROPIC_API_KEY": ("anthropic",),
}
"""Each provider key variable, and the providers (the `provider` of `provider:model`) it may be sent to."""
PROVIDER_HOSTS: Mapping[str, tuple[str, ...]] = {
    "OPENAI_API_KEY": ("api.openai.com",),
    "ANTHROPIC_API_KEY": ("api.anthropic.com",),
}
"""Where a provider key may be sent through a model's `base_url`, besides a server on this machine (loopback)."""
AGENT_PREFIX = "STALWART_AGENT_"
"""The namespace of variables kept for agent files: the worker never reads a setting of its own there."""
ALLOWED_PREFIX = "STALWART_"
REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
MAX_SECRET_FILE_BYTES = 1 << 20
"""A secret setting naming a file (a key file) is read whole up to this size, to redact what it holds."""

_lock = threading.Lock()
_values: frozenset[str] = frozenset()
_by_length: tuple[str, ...] = ()
_allowed_by_workers: Counter[str] = Counter()


class EnvNotAllowed(UsageError, ValueError):
    """An agent file names an environment variable the worker does not let agent files read."""


# -- which variables ----------------------------------------------------------------------------------------------


def allowed_patterns(environ: Mapping[str, str] | None = None) -> list[str]:
    """What agent files may read here (rule 3): the agent namespace, `STALWART_*`, `STALWART_ALLOWED_ENV`'s
    names, and what running workers added. Provider keys and the worker's settings are refused before these."""
    environ = os.environ if environ is None else environ
    return [f"{AGENT_PREFIX}*", f"{ALLOWED_PREFIX}*", *_listed(environ), *sorted(_allowed_by_workers)]


def _listed(environ: Mapping[str, str]) -> list[str]:
    return [name.strip() for name in environ.get(ALLOWED_ENV_VAR, "").split(",") if name.strip()]


def env_problem(
    name: str,
    where: str,
    environ: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    base_url: str | None = None,
) -> str | None:
    """Why an agent file may not read `name` (named by `where`), with what to do instead; None when it may.

    `provider` is the provider of the model whose key `name` is (`openai`, `anthropic`, `auto`, ...), and
    `base_url` where that model is called; both None for every other use (MCP headers and env, `auth_token_env`)."""
    instead = f"{AGENT_PREFIX}{_stem(name)}"
    if name in PROVIDER_KEYS:
        owners = PROVIDER_KEYS[name]
        if provider is None or not (provider in owners or provider == "auto"):
            use = f"model `{provider}:...`" if provider is not None else "an MCP server or a remote agent"
            return (
                f"{where} names {name}, the API key of {' and '.join(owners)}: the worker sends it only to that "
                f"provider, for a model `{owners[0]}:...`, never to {use}. Give this its own key: export it as "
                f"{instead} (or a name listed in {ALLOWED_ENV_VAR}) where the worker runs, and name that instead."
            )
        host = _foreign_host(name, base_url)
        if host is None:
            return None
        return (
            f"the model's `base_url` would send {name} to {host}, which is not {owners[0]}'s API "
            f"({', '.join(PROVIDER_HOSTS[name])}) nor a server on this machine: the worker sends a provider's key "
            f"only to that provider. For another server, export its own key as {instead} where the worker runs "
            f'and set `api_key_env = "{instead}"`.'
        )
    setting = worker_settings.setting_of(name)
    if setting is not None:
        return (
            f"{where} names {name}, a setting of the worker itself ({setting}): agent files may never read the "
            f"worker's own settings, whatever {ALLOWED_ENV_VAR} or allowed_env says. Export what this agent file "
            f"needs as a variable of its own, e.g. {instead}, and name that instead."
        )
    if env_allowed(name, environ):
        return None
    allowed = ", ".join(allowed_patterns(environ))
    return (
        f"{where} names the environment variable {name}, which the worker does not let agent files read "
        f"(allowed: {allowed}). Rename it to {instead}, or let the worker read it: "
        f"{ALLOWED_ENV_VAR}={name} in the worker's environment, or StalwartPlugin(allowed_env=[{name!r}])."
    )


def model_key_problem(model: str, api_key_env: str | None, base_url: str | None, where: str) -> str | None:
    """Why a model's key may not be read (`api_key_env`, else its provider's own key variable); None when it may."""
    provider = model.partition(":")[0]
    name = api_key_env or next((key for key, owners in PROVIDER_KEYS.items() if provider in owners), None)
    if name is None:
        return None
    return env_problem(name, where, provider=provider, base_url=base_url)


def _foreign_host(name: str, base_url: str | None) -> str | None:
    """The host of `base_url` when a request there could reach someone other than the provider whose key `name` is:
    neither its API nor this machine. A host no request can reach (one no HTTP client can encode, or under the
    reserved `.invalid`, RFC 6761) is not one: the model call fails there on its own, saying why."""
    if not base_url:
        return None
    try:
        host = (urlsplit(base_url).hostname or "").rstrip(".").lower()
        host.encode("idna")
    except ValueError:  # UnicodeError too: no HTTP client can send anything there
        return None
    if not host or host in PROVIDER_HOSTS[name] or host == "localhost" or host.endswith((".localhost", ".invalid")):
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return None
    return host


def _stem(name: str) -> str:
    """`name` without a prefix of ours, to suggest `STALWART_AGENT_<stem>`."""
    for prefix in (AGENT_PREFIX, ALLOWED_PREFIX):
        if name.upper().startswith(prefix):
            return name[len(prefix) :] or "TOKEN"
    return name


def env_allowed(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether rule 3 lets agent files read `name` (provider keys and the worker's settings aside)."""
    if name in PROVIDER_KEYS or worker_settings.setting_of(name) is not None:
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed_patterns(environ))


def read_env(
    name: str,
    where: str,
    environ: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    base_url: str | None = None,
) -> str | None:
    """The value of a variable the agent file may read (None when unset), remembered as a secret;
    EnvNotAllowed otherwise. `provider` and `base_url`: as for `env_problem`, given only for a model's key."""
    environ = os.environ if environ is None else environ
    problem = env_problem(name, where, environ, provider=provider, base_url=base_url)
    if problem is not None:
        raise EnvNotAllowed(problem)
    value = environ.get(name)
    if value is not None:
        remember(value)
    return value


@contextlib.contextmanager
def allowing(names: Iterable[str]) -> Iterator[None]:
    """Let agent files read these variables too while a worker runs (`StalwartPlugin(allowed_env=...)`);
    their values are secrets from now on."""
    names = list(names)
    with _lock:
        _allowed_by_workers.update(names)
    remember_environment()
    try:
        yield
    finally:
        with _lock:
            _allowed_by_workers.subtract(names)
            for name in [name for name, count in _allowed_by_workers.items() if count <= 0]:
                del _allowed_by_workers[name]


def remember_environment(environ: Mapping[str, str] | None = None) -> None:
    """Treat as secrets, before any activity runs, the values a worker here can see: every provider key, every
    secret setting of the worker's (the content of a key file it names), every variable agent files may read.

    Without it a key was redacted only once something had read it: a tool result holding the Anthropic key
    went out whole on a worker that had not yet called Anthropic. A value that is one plain lower-case word
    (`testing`, a development default) is left alone, as short values are: redacting it would hide that word in
    every answer; it is still redacted once something reads it for an agent file."""
    environ = os.environ if environ is None else environ
    # Not `*` and the like: a worker letting agent files read everything would redact every path and word.
    readable = [p for p in [f"{AGENT_PREFIX}*", *_listed(environ), *_allowed_by_workers] if p[:1].isalnum()]
    for name, value in list(environ.items()):
        if value.isalpha() and value.islower():
            continue
        if name in PROVIDER_KEYS:
            remember(value)
        elif worker_settings.is_secret(name):
            if name.upper().endswith(worker_settings.FILE_SUFFIXES):
                value = _file_text(value)
            remember(value, split=True)
        elif worker_settings.setting_of(name) is None and any(fnmatch.fnmatchcase(name, p) for p in readable):
            remember(value)


def _file_text(path: str) -> str:
    """What a secret setting's file holds, or nothing when it cannot be read (its reader will say why)."""
    try:
        file = Path(path).expanduser()
        if not file.is_file():  # a pipe would block the worker's start; a folder holds no key
            return ""
        with file.open("rb") as opened:
            return opened.read(MAX_SECRET_FILE_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


# -- redaction ----------------------------------------------------------------------------------------------------


def remember(value: str, *, split: bool = False) -> None:
    """Treat `value` as a secret from now on (each line of it too, for values that hold several).

    With `split` (a setting or file listing several secrets, `ID:KEY,ID:KEY` or `name = KEY` lines), each
    comma-separated entry, what follows its last `:` and what follows its first `=` are secrets too."""
    global _values, _by_length
    parts = {part.strip() for part in [value, *value.splitlines()]}
    if split:
        entries = {entry.strip() for line in value.splitlines() for entry in line.split(",")}
        values = {entry.rpartition(":")[2] for entry in entries} | {entry.partition("=")[2] for entry in entries}
        parts |= entries | {value.strip().strip("\"'") for value in values}
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
    secret is held back too, so a key split across two chunks is never shown in part. It is held back
    before any replacement as well: a secret of several lines (a key file, each line a secret too) is not
    shown as its first lines redacted, and its short lines whole, while the rest of it is still to come.
    """
    if partial_tail and not _straddled(text, cut := len(text) - _pending(text)):
        text = text[:cut]
    for secret in _by_length:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if partial_tail:
        text = text[: len(text) - _pending(text)]
    return text


def _pending(text: str) -> int:
    """How long the longest ending of `text` that is the start (not the whole) of a secret is; 0 if none."""
    longest = 0
    for secret in _by_length:
        at = max(len(text) - len(secret) + 1, 0)
        while (at := text.find(secret[0], at)) != -1 and len(text) - at > longest:
            if secret.startswith(text[at:]):
                longest = len(text) - at
                break
            at += 1
    return longest


def _straddled(text: str, at: int) -> bool:
    """Whether a whole secret in `text` begins before `at` and ends after it: it is redacted whole whatever follows,
    so cutting it there would show its start."""
    return at < len(text) and any(
        text.find(secret, max(at - len(secret) + 1, 0), at + len(secret) - 1) != -1 for secret in _by_length
    )


class RedactedStream:
    """Text that arrives in pieces (a streamed answer), as it may be shown so far: redacted, and without an ending
    that could be the start of a secret (`redact(..., partial_tail=True)` of all the text so far).

    Each piece costs the redaction of the text not yet settled, not of everything so far: text up to a point no
    secret can straddle (no ending of it is the start of one) redacts the same whatever follows, so it is settled.
    `extend` says what a piece changed in those terms too, so a long answer in many small pieces costs each piece
    its own length, not the length of the text so far; `shown` joins the text only when asked.
    """

    def __init__(self) -> None:
        self._settled: list[str] = []
        """The shown text of every piece up to the last point no secret could straddle, in parts (joined when shown)."""
        self._open = ""
        """The text as written since that point: it never leaves the worker unredacted."""
        self._tail = ""
        """What may be shown of `_open`."""
        self.length = 0
        """How long `shown` is."""
        self._joined: str | None = ""

    @property
    def shown(self) -> str:
        """The text that may be shown now."""
        if self._joined is None:
            settled = "".join(self._settled)
            self._settled = [settled] if settled else []
            self._joined = settled + self._tail
        return self._joined

    def add(self, piece: str) -> str:
        """Take the next piece; returns the text that may be shown now (`shown`)."""
        self.extend(piece)
        return self.shown

    def extend(self, piece: str) -> tuple[int, str] | None:
        """Take the next piece; returns what it changed: `shown` now keeps its first `at` characters (all of them
        but for secrets that overlap each other) and goes on with `text`. None when it changed nothing."""
        self._open += piece
        before, settled = self._tail, self.length - len(self._tail)
        if _pending(self._open):
            after = self._tail = redact(self._open, partial_tail=True)
        else:
            after = redact(self._open)
            if held := _pending(after):  # text ending where a secret starts, once another secret is replaced
                after = self._tail = after[:-held]
            else:
                self._settled.append(after)
                self._open = self._tail = ""
        same = len(before) if after.startswith(before) else len(os.path.commonprefix([before, after]))
        if same == len(before) == len(after):
            return None
        self.length = settled + len(after)
        self._joined = None
        return settled + same, after[same:]


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

    for current in exception_chain(err):
        yield str(current)
        if isinstance(current, ApplicationError):
            yield repr(current.details)


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
