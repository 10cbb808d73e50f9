"""One streamed call to a provider, on the worker's SDK client: its deadlines, and its errors translated.

A stream that hangs before its first token (`first_token_seconds`) or goes
silent between two events (`stall_seconds`) is cut and retried at once
instead of holding the activity until its start-to-close timeout. Both
deadlines are enforced here, by `events_within`; the SDK client's read
timeout is only a backstop no shorter than either. Both are set per agent
under `[extra]`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from stalwart.activities.providers import credentials, errors
from stalwart.activities.providers.base import ModelUnavailableError
from stalwart.activities.providers.clients import ClientT, SdkClients
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.messages import AssistantTurn

FIRST_TOKEN_SECONDS = 90.0
"""Reasoning models on Chat Completions send nothing until they have thought; 90 s leaves room for that."""
STALL_SECONDS = 60.0


@dataclass(frozen=True)
class Endpoint:
    """A provider as users name it, the variable its key comes from, and where it is served by default."""

    label: str
    default_key_env: str | None
    default_base_url: str | None = None

    def prepare(self, agent: AgentSpec) -> tuple[str, str, errors.Target]:
        """The model name, the API key, and the target that error messages name."""
        model = agent.model.split(":", 1)[1]
        env = credentials.key_env(agent, self.default_key_env)
        key = credentials.api_key(agent, self.default_key_env)
        return model, key, errors.Target(self.label, model, env, agent.base_url or self.default_base_url)


async def events_within(
    open_stream: Callable[[], Awaitable[Any]],
    *,
    first_token_seconds: float,
    stall_seconds: float,
    what: str,
    where: str | None = None,
) -> AsyncGenerator[Any, None]:
    """The events of a streamed response: the request and first event must arrive within `first_token_seconds`,
    each later one within `stall_seconds` of the one before. A response the SDK cannot decode raises
    `ModelGarbledError` naming `where` (the provider and its URL), the status and what came back."""
    stream: Any = None
    try:
        try:
            async with asyncio.timeout(first_token_seconds):
                stream = await open_stream()
                iterator = stream.__aiter__()
                event = await anext(iterator, _END)
        except TimeoutError as err:
            raise ModelUnavailableError(
                f"{what} sent no first token within {first_token_seconds:g}s; the attempt is retried. If the model is "
                f"just slow to start, raise `first_token_seconds` under [extra] in the agent file."
            ) from err
        if event is _END and "event-stream" not in _content_type(stream):
            # Not a stream at all (an HTML page, a JSON body): not the provider's API speaking.
            raise errors.garbled(where or what, getattr(stream, "response", None), None)
        while event is not _END:
            yield event
            try:
                async with asyncio.timeout(stall_seconds):
                    event = await anext(iterator, _END)
            except TimeoutError as err:
                raise ModelUnavailableError(
                    f"the stream from {what} went silent for {stall_seconds:g}s; the attempt is retried. If the model "
                    f"pauses longer mid-answer, raise `stall_seconds` under [extra] in the agent file."
                ) from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        # The SDK could not decode what came back: binary junk, invalid UTF-8, an event that is not JSON.
        raise errors.garbled(where or what, getattr(stream, "response", None), err) from None
    finally:
        if stream is not None:  # however the stream ends, even on its first event, its connection goes back to the pool
            await stream.close()


_END = object()


def _content_type(stream: Any) -> str:
    response = getattr(stream, "response", None)
    headers = getattr(response, "headers", None) or {}
    return str(headers.get("content-type", "text/event-stream"))


def first_token_seconds(extra: dict[str, object]) -> float:
    """The agent's first-token deadline (`extra.first_token_seconds`), default 90 s."""
    return float(extra.get("first_token_seconds", FIRST_TOKEN_SECONDS))  # type: ignore[arg-type]


def stall_seconds(extra: dict[str, object]) -> float:
    """How long a started stream may go silent (`extra.stall_seconds`), default 60 s."""
    return float(extra.get("stall_seconds", STALL_SECONDS))  # type: ignore[arg-type]


def read_seconds(extra: dict[str, object]) -> float:
    """The SDK client's read timeout: a backstop that must not cut either deadline `events_within` enforces, so the
    longer of the two."""
    return max(stall_seconds(extra), first_token_seconds(extra))


async def streamed_turn(
    endpoint: Endpoint,
    agent: AgentSpec,
    clients: SdkClients,
    sdk_client: type[ClientT],
    request: Callable[[str], dict[str, Any]],
    send: Callable[[ClientT, dict[str, Any]], Awaitable[Any]],
    fold: Callable[[AsyncIterator[Any], str, errors.Target], Awaitable[AssistantTurn]],
) -> AssistantTurn:
    """One turn from a streaming SDK: the worker's client of `sdk_client` (no SDK retries), the request `send`
    opens within both stream deadlines, its events folded into a turn, and SDK failures translated into ModelErrors.

    `request(model)` is what `send(client, request)` sends; `fold(events, model, target)` builds the turn.
    """
    model, key, target = endpoint.prepare(agent)
    body = request(model)
    try:  # making the client is inside: an SDK refuses a `base_url` its HTTP client cannot open there
        client = clients.get(sdk_client, api_key=key, base_url=target.base_url, read_seconds=read_seconds(agent.extra))
        events = events_within(
            lambda: send(client, body),
            first_token_seconds=first_token_seconds(agent.extra),
            stall_seconds=stall_seconds(agent.extra),
            what=target.provider,
            where=errors.where(target),
        )
        async with aclosing(events):
            return await fold(events, model, target)
    except Exception as err:
        translated = errors.translate(err, target, key)
        if translated is None or translated is err:
            raise
        raise translated from None
