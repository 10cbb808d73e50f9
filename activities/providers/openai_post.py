"""A streamed request to an OpenAI API, sent as the SDK's `create` sends it but without `create`'s typed transform.

`create` first runs the body through the SDK's `async_maybe_transform`, which walks every message (every input
item, across the union of every item type, for Responses) with typing introspection to rename and reformat fields.
A plain JSON body such as the providers build comes out of it unchanged, and the walk cost 0.7 ms of CPU at 2
messages and 14 ms at 42 per Chat Completions call, most of a Responses call's CPU: a run paid for it
quadratically. The SDK's public `post` sends the body as it is, on the same client (its retries off, its timeouts,
its auth), and raises the same errors; what else `create` does for a streamed request is repeated here: the path,
the response and event types (the caller's), and bearer authentication only (`security`).
tests/providers/test_sdk_request_bodies.py holds the two to the same body and headers at the server.
"""

from __future__ import annotations

from typing import Any, TypeVar

import openai

EventT = TypeVar("EventT")


async def post_streamed(
    client: openai.AsyncOpenAI,
    path: str,
    body: dict[str, Any],
    *,
    cast_to: type[Any],
    stream_cls: type[openai.AsyncStream[EventT]],
) -> openai.AsyncStream[EventT]:
    """`body` streamed from POST `path`, as the `create` of that path sends it: `cast_to` is the response type that
    `create` names, `stream_cls` its stream of events."""
    return await client.post(
        path,
        body=body,
        cast_to=cast_to,
        options={"security": {"bearer_auth": True}},
        stream=True,
        stream_cls=stream_cls,
    )
