"""One HTTP exchange with a remote agent, and the retry decision for each way it can go wrong.

Only what a later attempt can fix is retryable: the agent unreachable, slow,
overloaded (408, 429, 5xx). Everything else (4xx, a body that is not JSON)
needs a person to change the URL, the token or the agent.
"""

from __future__ import annotations

from typing import Any

import httpx

from stalwart.activities import secrets
from stalwart.activities.a2a.errors import A2AProtocolError, A2ARequestError, A2AUnavailableError
from stalwart.activities.retry_after import retry_after_seconds
from stalwart.activities.unreachable import unreachable

_RETRYABLE_STATUS = {408, 425, 429}


def auth_headers(token_env: str | None) -> dict[str, str]:
    """The bearer token header read from the worker's environment, so no secret travels through history."""
    if token_env is None:
        return {}
    try:  # only a variable the worker allows; the token is redacted wherever it would leave the activity
        token = secrets.read_env(token_env, "`auth_token_env`")
    except secrets.EnvNotAllowed as err:
        raise A2ARequestError(str(err)) from None
    if not token:
        raise A2ARequestError(
            f"environment variable {token_env} (auth_token_env) is not set on this worker; "
            f"export it with the remote agent's bearer token and restart the worker."
        )
    return {"Authorization": f"Bearer {token}"}


async def send(http: httpx.AsyncClient, method: str, url: str, what: str, **options: Any) -> httpx.Response:
    """Send a request; a network failure or timeout becomes a retryable error naming the URL, and a URL no HTTP
    client can open (`check` cannot know every one, and a card names its own endpoint) a final one."""
    try:
        request = http.build_request(method, url, **options)
    except httpx.InvalidURL as err:
        raise A2ARequestError(
            f"{what}: {url} is not a URL an HTTP client can open ({err}); fix the agent's `url`"
        ) from err
    try:
        return await http.send(request)
    except httpx.TimeoutException as err:
        raise A2AUnavailableError(
            f"{what}: no answer from {request.url} in time ({type(err).__name__}); the agent may be overloaded. "
            f"Raise poll.request_timeout_seconds if it is always this slow."
        ) from err
    except httpx.TransportError as err:
        why = unreachable(err, str(request.url), "the sub-agent's `url` in the agent file (or the card's endpoint)")
        if why:  # retried all the same: a name server or the agent may be back in a moment
            raise A2AUnavailableError(f"{what}: cannot reach {request.url} ({type(err).__name__}): {why}.") from err
        raise A2AUnavailableError(
            f"{what}: cannot reach {request.url} ({type(err).__name__}: {err or 'no detail'}); "
            f"check that the agent is running and the URL is right."
        ) from err


def check_status(response: httpx.Response, what: str, *, token_env: str | None = None) -> None:
    """Raise the error a non-2xx status means: retryable for 408/425/429/5xx (after Retry-After), final otherwise."""
    status = response.status_code
    if response.is_success:
        return
    url = response.request.url
    detail = _snippet(response)
    if status in _RETRYABLE_STATUS or status >= 500:
        raise A2AUnavailableError(
            f"{what}: {url} answered HTTP {status} {response.reason_phrase} ({detail}); retrying later.",
            retry_after=retry_after_seconds(response.headers),
        )
    if status in (401, 403):
        fix = (
            f"check the token in {token_env} (auth_token_env); the agent refused it"
            if token_env
            else "set auth_token_env to a worker environment variable holding the agent's bearer token"
        )
        raise A2ARequestError(f"{what}: {url} answered HTTP {status} {response.reason_phrase} ({detail}); {fix}.")
    raise A2ARequestError(
        f"{what}: {url} answered HTTP {status} {response.reason_phrase} ({detail}); "
        f"check that the URL is the agent's A2A endpoint."
    )


def json_body(response: httpx.Response, what: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise A2AProtocolError(
            f"{what}: {response.request.url} answered a body that is not JSON ({_snippet(response)}); "
            f"check that the URL points at an A2A agent."
        ) from None


def _snippet(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    return (text[:200] + "…") if len(text) > 200 else (text or "empty body")
