"""Provider failures translated into Stalwart's three error classes.

The SDKs' own retries are off; this is where a failure is judged retryable
(Temporal retries it, honouring Retry-After) or final (the run stops with a
message that names the cause and the fix). Messages never carry the API key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import anthropic
import httpx
import httpx2
import openai

from stalwart.activities.providers.base import ModelError, ModelRequestError, ModelUnavailableError
from stalwart.activities.retry_after import retry_after_seconds

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
_RETRYABLE_TYPES = {"overloaded_error", "rate_limit_error", "api_error", "server_error", "rate_limit_exceeded"}
_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|context window|prompt is too long|maximum context|too many tokens", re.I
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
    if isinstance(err, (openai.APIStatusError, anthropic.APIStatusError)):
        return _from_status(err.status_code, err.response.headers, _message(err), _error_type(err.body), target, secret)
    if isinstance(
        err, (openai.APITimeoutError, anthropic.APITimeoutError, httpx.TimeoutException, httpx2.TimeoutException)
    ):
        return ModelUnavailableError(f"{_where(target)} timed out; the attempt is retried.")
    if isinstance(err, (openai.APIConnectionError, anthropic.APIConnectionError)):
        return ModelUnavailableError(
            f"cannot connect to {_where(target)} ({_redact(str(err.__cause__ or err), secret)}); "
            "the attempt is retried."
        )
    if isinstance(err, (openai.APIError, anthropic.APIError)):
        kind = _error_type(err.body)
        text = _redact(_message(err), secret)
        if kind is None or kind in _RETRYABLE_TYPES:
            return ModelUnavailableError(
                f"{_where(target)} failed mid-stream ({kind or 'error'}: {text}); the attempt is retried."
            )
        return ModelRequestError(f"{_where(target)} refused the request ({kind}: {text}).")
    if isinstance(err, httpx2.HTTPError):
        return ModelUnavailableError(
            f"the stream from {_where(target)} broke off ({type(err).__name__}: {err}); the attempt is retried."
        )
    return None


def incomplete(target: Target) -> ModelUnavailableError:
    """A stream that ended without its closing event: the turn is unusable and is generated again."""
    return ModelUnavailableError(
        f"the stream from {_where(target)} ended before the response was complete; the attempt is retried."
    )


def _from_status(
    status: int, headers: Mapping[str, str], message: str, kind: str | None, target: Target, secret: str | None
) -> ModelError:
    text = _redact(message, secret)
    where = _where(target)
    if status in _RETRYABLE_STATUS or (kind in _RETRYABLE_TYPES and status >= 500) or kind == "overloaded_error":
        retry_after = retry_after_seconds(headers)
        wait = f" after the {retry_after:g}s it asked for" if retry_after else " with backoff"
        return ModelUnavailableError(f"{where} answered {status} ({text}); retrying{wait}.", retry_after=retry_after)
    if status == 401:
        key = f"`{target.key_env}`" if target.key_env else "the API key"
        return ModelRequestError(
            f"{where} rejected the API key (401 Unauthorized: {text}). Put a valid key in {key} in the worker's "
            f"environment and restart the worker."
        )
    if status == 403:
        return ModelRequestError(
            f"{where} denied access to model {target.model!r} (403 Forbidden: {text}). Use a key whose project or "
            f"workspace may use this model, or choose another model in the agent file."
        )
    if status == 404:
        return ModelRequestError(
            f"{where} does not know model {target.model!r} or the endpoint (404 Not Found: {text}). Check the model "
            f"name after the provider prefix in the agent file" + (" and its `base_url`." if target.base_url else ".")
        )
    if _CONTEXT_LENGTH.search(message) or kind == "context_length_exceeded":
        return ModelRequestError(
            f"the conversation no longer fits model {target.model!r}'s context window ({status}: {text}). "
            "Set a smaller "
            f"`history_limit` in the agent file, shorten tool results, or choose a model with a longer context."
        )
    return ModelRequestError(
        f"{where} rejected the request ({status}: {text}). Check the agent's model settings (model, temperature, "
        f"max_output_tokens) and tool schemas."
    )


def _where(target: Target) -> str:
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
