"""Visibility queries a person writes (`stalwart runs --query`, `replay --query`, `history export --query`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError, RPCStatusCode

from stalwart.contracts.errors import UsageError


class InvalidQuery(UsageError, ValueError):
    """Temporal refused a visibility query as written: fix the query (the message quotes the server's reason)."""


async def matching(client: Client, query: str, limit: int | None = None) -> AsyncIterator[WorkflowExecution]:
    """The runs `query` matches, newest first; a query the server refuses is an `InvalidQuery`.

    Listing runs sends the query and nothing else the caller wrote, so the server refusing an argument of it
    (INVALID_ARGUMENT) is refusing the query."""
    try:
        async for execution in client.list_workflows(query, limit=limit):
            yield execution
    except RPCError as err:
        if err.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        raise InvalidQuery(
            f"--query is not a visibility query Temporal accepts: {err.message} (a position counts from Stalwart's "
            "own conditions, put before yours); the syntax: https://docs.temporal.io/list-filter"
        ) from err
