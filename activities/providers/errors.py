"""Provider failures translated into Stalwart's three error classes.

The SDKs' own retries are off; this is where a failure is judged retryable
(Temporal retries it, honouring Retry-After) or final (the run stops with a
message that names the cause and the fix). Messages never carry the API key.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

import httpx
import httpx2

from stalwart.activities import secrets
from stalwart.activities.providers.base import (
    ModelConfigError,
    ModelError,
    ModelGarbledError,
    ModelRequestError,
    ModelUnavailableError,
)
from stalwart.activities.retry_after import retry_after_seconds
from stalwart.activities.unreachable import unreachable

if TYPE_CHECKING:  # a worker loads each SDK when an agent first uses it (activities/providers/__init__.py)
    import anthropic
    import openai

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
_RETRYABLE_TYPES = {"overloaded_error", "rate_limit_error", "api_error", "server_error", "rate_limit_exceeded"}
_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|context window|prompt is too long|maximum context|too many tokens", re.I
)
_TOO_LARGE = re.compile(
    r"request too large|payload too large|request entity too large|request exceeds the maximum size", re.I
)
_KEYLIKE = re.compile(r"\b(sk|key)-[A-Za-z0-9*_.\-]{4,}")


@dataclass(frozen=True)
class Target:
    """Who was called, for messages that say what to fix."""

    provider: str
    model: str
    key_env: str | None
    base_url: str | None = None


def translate(err: BaseException, target: Target, secret: str | None) -> ModelError | None:
    """The ModelError for an SDK or transport failure, or None when `err` is not one."""
    if isinstance(err, ModelError):
        return err
    if _is_status_error(err) and err.status_code >= 400:
        return _from_status(err.status_code, err.response.headers, _message(err), _error_type(err.body), target, secret)
    if isinstance(err, (*_sdk_errors("APITimeoutError"), httpx.TimeoutException, httpx2.TimeoutException)):
        return ModelUnavailableError(f"{where(target)} timed out; the attempt is retried.")
    if isinstance(err, _sdk_errors("APIConnectionError")):
        sent_to = getattr(getattr(err, "request", None), "url", None)
        why = unreachable(err, str(sent_to) if sent_to else target.base_url, "`base_url` in the agent file")
        if why:  # retried all the same: a name server or a server may be back in a moment
            return ModelUnavailableError(f"cannot connect to {where(target)}: {why}; the attempt is retried.")
        return ModelUnavailableError(
            f"cannot connect to {where(target)} ({_redact(str(err.__cause__ or err), secret)}); the attempt is retried."
        )
    if _is_api_error(err):
        # An error event in a stream that began well (HTTP 200): Anthropic's SDK raises it as a status error of the
        # stream's own status, so it would read "answered 200 (Overloaded)". The error's type says what it is.
        return _in_stream(_error_type(err.body), _redact(_message(err), secret), target)
    if isinstance(err, (httpx.InvalidURL, httpx2.InvalidURL)):
        return ModelConfigError(
            f"no request can be sent to {where(target)}: its URL is not one an HTTP client can open ({err}); "
            "fix `base_url` in the agent file"
        )
    if isinstance(err, httpx2.HTTPError):
        return ModelUnavailableError(
            f"the stream from {where(target)} broke off ({type(err).__name__}: {err}); the attempt is retried."
        )
    return None


def _in_stream(kind: str | None, text: str, target: Target) -> ModelError:
    """The provider's error event in the middle of a stream: retried when its type is one that passes (overloaded,
    rate limited, the provider's own failure), final when the request itself is at fault."""
    reported = f"{where(target)} reported an error while streaming: {kind or 'error'}: {shorten(text, 300)}"
    if kind is None or kind in _RETRYABLE_TYPES:
        return ModelUnavailableError(f"{reported}; the attempt is retried.")
    if _CONTEXT_LENGTH.search(text) or kind == "context_length_exceeded":
        return ModelRequestError(
            f"{reported}. The conversation no longer fits model {target.model!r}'s context window: set a smaller "
            "`history_limit` in the agent file, shorten tool results, or choose a model with a longer context."
        )
    return ModelRequestError(
        f"{reported}. Retrying the same request cannot help: check the agent's model settings (model, temperature, "
        "max_output_tokens) and tool schemas."
    )


def _sdk_errors(name: str) -> tuple[type[Exception], ...]:
    """The exception class `name` of each provider SDK this process has loaded: an SDK's error comes only from an
    SDK that is loaded, and looking one up in an SDK that is not would load it."""
    return tuple(getattr(sdk, name) for sdk in map(sys.modules.get, ("openai", "anthropic")) if sdk is not None)


def _is_status_error(err: BaseException) -> TypeGuard[openai.APIStatusError | anthropic.APIStatusError]:
    return isinstance(err, _sdk_errors("APIStatusError"))


def _is_api_error(err: BaseException) -> TypeGuard[openai.APIError | anthropic.APIError]:
    return isinstance(err, _sdk_errors("APIError"))


def incomplete(target: Target) -> ModelUnavailableError:
    """A stream that ended without its closing event: the turn is unusable and is generated again."""
    return ModelUnavailableError(
        f"the stream from {where(target)} ended before the response was complete; the attempt is retried."
    )


def no_choices(target: Target) -> ModelGarbledError:
    """A Chat Completions stream that ended cleanly without a single choice: no answer, however often it is asked
    the same way, so it counts as garbled (a few attempts), not as a stream cut short (retried like an outage)."""
    return ModelGarbledError(
        f"the stream from {where(target)} ended without a single choice, so it holds no answer. This is not the "
        "provider's Chat Completions API answering as it does (check `base_url` in the agent file, and any proxy "
        "between the worker and the provider)."
    )


SHOWN_BYTES = 80
"""How much of a garbled body an error message shows."""
_SAMPLED_BYTES = 16 * 1024
"""How much of it is read for that: enough that a secret near its start is whole, so redaction finds it."""


def garbled(what: str, response: object | None, err: BaseException | None) -> ModelGarbledError:
    """A response that is not the provider's API speaking: named by provider, status and content type, with the
    start of what came back (escaped, shortened), so a wrong `base_url` or a broken proxy is plain to see."""
    status = getattr(response, "status_code", None)
    headers = getattr(response, "headers", None) or {}
    content_type = headers.get("content-type") or "no content type"
    answered = f"answered HTTP {status} ({content_type})" if status is not None else "answered"
    # The sample is cut by `shorten`, after redaction: cut first, a secret in it would be shown in part.
    if isinstance(err, UnicodeDecodeError):
        problem = "a body that is not UTF-8 text"
        sample: bytes | str | None = err.object[:_SAMPLED_BYTES] if isinstance(err.object, bytes) else None
    elif isinstance(err, ValueError) and hasattr(err, "doc"):  # json.JSONDecodeError
        problem = "an event that is not JSON"
        sample = str(getattr(err, "doc", ""))[:_SAMPLED_BYTES]
    else:
        problem = "no server-sent events at all"
        sample = None
    came_back = f": {shorten(sample)}" if sample else ""
    return ModelGarbledError(
        f"{what} {answered} with {problem}{came_back}. This is not the provider's API answering (check `base_url` "
        f"in the agent file, and any proxy between the worker and the provider), or the response was corrupted in "
        f"transit."
    )


def shorten(value: bytes | str, limit: int = SHOWN_BYTES) -> str:
    """`value` as printable text: escapes for bytes that are not printable UTF-8, cut at `limit` characters.

    The secrets the worker holds are redacted before the cut, and an end that could be the start of one is
    dropped with the rest: a key cut in two is still a key shown in part.
    """
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value
    text = "".join(c if c.isprintable() and c != "\ufffd" else c.encode("unicode_escape").decode() for c in text)
    text = secrets.redact(text)
    return text if len(text) <= limit else secrets.redact(text[:limit], partial_tail=True) + "..."


def _from_status(
    status: int, headers: Mapping[str, str], message: str, kind: str | None, target: Target, secret: str | None
) -> ModelError:
    text = shorten(_redact(message, secret), 300)
    place = where(target)
    if status == 413 or kind == "request_too_large" or _TOO_LARGE.search(message):
        # Too large for the provider at all (413), or for the account's tokens per minute even with none spent
        # (OpenAI answers that with a 429): the same request fails the same way however long it waits.
        return ModelRequestError(
            f"{place} refused the request as too large ({status}: {text}). Waiting and retrying cannot help: "
            "make the request smaller (a smaller `history_limit` in the agent file, shorter tool results, a lower "
            "`max_output_tokens`), or use a model or account tier whose limits allow it."
        )
    if status in _RETRYABLE_STATUS or (kind in _RETRYABLE_TYPES and status >= 500) or kind == "overloaded_error":
        retry_after = retry_after_seconds(headers)
        wait = f" after the {retry_after:g}s it asked for" if retry_after else " with backoff"
        return ModelUnavailableError(f"{place} answered {status} ({text}); retrying{wait}.", retry_after=retry_after)
    if status == 401:
        key = f"`{target.key_env}`" if target.key_env else "the API key"
        return ModelRequestError(
            f"{place} rejected the API key (401 Unauthorized: {text}). Put a valid key in {key} in the worker's "
            f"environment and restart the worker."
        )
    if status == 403:
        return ModelRequestError(
            f"{place} denied access to model {target.model!r} (403 Forbidden: {text}). Use a key whose project or "
            f"workspace may use this model, or choose another model in the agent file."
        )
    if status == 404:
        return ModelRequestError(
            f"{place} does not know model {target.model!r} or the endpoint (404 Not Found: {text}). Check the model "
            f"name after the provider prefix in the agent file" + (" and its `base_url`." if target.base_url else ".")
        )
    if _CONTEXT_LENGTH.search(message) or kind == "context_length_exceeded":
        return ModelRequestError(
            f"the conversation no longer fits model {target.model!r}'s context window ({status}: {text}). "
            "Set a smaller "
            f"`history_limit` in the agent file, shorten tool results, or choose a model with a longer context."
        )
    return ModelRequestError(
        f"{place} rejected the request ({status}: {text}). Check the agent's model settings (model, temperature, "
        f"max_output_tokens) and tool schemas."
    )


def where(target: Target) -> str:
    """The provider, and its URL when the agent set one: what error messages name."""
    return f"{target.provider} ({target.base_url})" if target.base_url else target.provider


def _message(err: BaseException) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return getattr(err, "message", None) or str(err)


def _error_type(body: object) -> str | None:
    if not isinstance(body, dict):
        return None
    inner = body.get("error", body)
    if isinstance(inner, dict):
        kind = inner.get("type") or inner.get("code")
        return str(kind) if kind else None
    return None


def _redact(text: str, secret: str | None) -> str:
    """Remove the key and anything that looks like (a masked form of) one; error bodies sometimes echo it."""
    if secret:
        text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)
