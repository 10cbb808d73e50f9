"""The A2A activities: describe a remote agent, and delegate a task to it until the task ends.

Temporal owns every retry: an unreachable or overloaded agent raises a
retryable error (after its Retry-After), anything a retry cannot fix raises a
non-retryable one whose message becomes `Delegation failed: ...` for the
model. While it waits the activity heartbeats with the remote task's id, so
a retry after a worker's death follows the same task instead of sending the
message again, and a cancelled delegation cancels the remote task.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
from temporalio import activity

from stalwart.activities import telemetry
from stalwart.activities.a2a import card, transport, wire
from stalwart.activities.a2a.errors import A2AError, A2AProtocolError, A2ATaskError
from stalwart.activities.a2a.jsonrpc import TASK_NOT_FOUND, Endpoint
from stalwart.activities.budget_guard import refuse_after
from stalwart.activities.heartbeats import heartbeating
from stalwart.contracts.a2a import (
    A2A_DELEGATE,
    A2A_DESCRIBE,
    A2AAgentCard,
    A2ADelegateRequest,
    A2ADelegateResult,
    A2ADescribeRequest,
    A2APollSettings,
    DelegationState,
)

HEARTBEAT_EVERY_SECONDS = 5.0
"""Well under `DELEGATE_HEARTBEAT` (workflows/a2a_policy.py), so a slow HTTP call never looks like a dead worker."""
CANCEL_WAIT_SECONDS = 5.0

_FAILURE_FIXES = {
    "failed": "the remote agent could not do it; try a different request, or do it without this agent",
    "rejected": "the remote agent declined the task; rephrase it or choose another agent",
    "canceled": "the task was canceled on the remote side; ask again only if it is still needed",
    "auth-required": "the remote agent needs credentials Stalwart does not have; set auth_token_env for this agent",
}


@activity.defn(name=A2A_DESCRIBE)
async def a2a_describe(request: A2ADescribeRequest) -> A2AAgentCard:
    """The remote agent's card, recorded in history so a prompt or tool schema built from it replays the same."""
    try:
        async with _http(request.request_timeout_seconds) as http:
            headers = transport.auth_headers(request.auth_token_env)
            return await card.discover(http, request.url, headers=headers, token_env=request.auth_token_env)
    except A2AError as err:
        raise err.to_application_error() from err


@activity.defn(name=A2A_DELEGATE)
async def a2a_delegate(request: A2ADelegateRequest) -> A2ADelegateResult:
    """Send `request.task` to the agent at `request.url` and return its answer once its task has ended."""
    refuse_after(request.deadline, f"the delegation to {request.url}")
    try:
        with telemetry.remote_agent(request.url) as remote:
            async with _http(request.poll.request_timeout_seconds) as http, _heartbeat() as beat:
                result = await _delegate(http, request, beat)
            remote.result(result.agent_name, result.state, result.task_id)
            return result
    except A2AError as err:
        raise err.to_application_error() from err


class _Beat:
    """What the heartbeat carries: the remote task being followed, for the next attempt to pick up."""

    def __init__(self) -> None:
        details = activity.info().heartbeat_details
        self.task_id: str | None = details[-1] if details and isinstance(details[-1], str) else None
        """Set from the previous attempt's last heartbeat, so it is kept even if this attempt fails early."""

    def follow(self, task_id: str | None) -> None:
        if task_id and task_id != self.task_id:
            self.task_id = task_id
            activity.heartbeat(task_id)


async def _delegate(http: httpx.AsyncClient, request: A2ADelegateRequest, beat: _Beat) -> A2ADelegateResult:
    auth = {**transport.auth_headers(request.auth_token_env), **telemetry.trace_headers()}
    agent = await card.discover(http, request.url, headers=auth, token_env=request.auth_token_env)
    dialect = wire.dialect_for(agent.protocol_version)
    endpoint = Endpoint(http, agent.endpoint, {**dialect.headers, **auth}, token_env=request.auth_token_env)
    reply = await _start_or_resume(endpoint, dialect, request, beat.task_id)
    beat.follow(reply.task_id)
    try:
        reply = await _follow(endpoint, dialect, reply, request.poll)
    except asyncio.CancelledError:
        await _cancel_remote(endpoint, dialect, reply.task_id)
        raise
    return _outcome(agent, reply)


async def _start_or_resume(
    endpoint: Endpoint, dialect: wire.Dialect, request: A2ADelegateRequest, started_task: str | None
) -> wire.Reply:
    """Follow the task an earlier attempt started, if the agent still knows it; otherwise send the message."""
    if started_task is not None:
        try:
            activity.logger.info("resuming remote task %s from the previous attempt", started_task)
            return dialect.task(await endpoint.call(dialect.get_method, dialect.task_params(started_task)))
        except A2AProtocolError as err:
            if err.rpc_code != TASK_NOT_FOUND:
                raise
            activity.logger.info("remote task %s is gone; sending the message again", started_task)
    params = dialect.send_params(request.task, request.idempotency_key, request.context_id, request.task_id)
    return dialect.send_result(await endpoint.call(dialect.send_method, params))


async def _follow(endpoint: Endpoint, dialect: wire.Dialect, reply: wire.Reply, poll: A2APollSettings) -> wire.Reply:
    """Poll the task, waiting longer each time up to the ceiling, until it ends or waits for input."""
    interval = poll.interval_seconds
    while not reply.finished:
        assert reply.task_id is not None  # only tasks are unfinished, and a task has an id
        await asyncio.sleep(interval)
        reply = dialect.task(await endpoint.call(dialect.get_method, dialect.task_params(reply.task_id)))
        interval = min(interval * poll.backoff, poll.max_interval_seconds)
    return reply


def _outcome(agent: A2AAgentCard, reply: wire.Reply) -> A2ADelegateResult:
    if reply.state in ("completed", "input-required"):
        state: DelegationState = "completed" if reply.state == "completed" else "input-required"
        return A2ADelegateResult(
            text=reply.text, task_id=reply.task_id, context_id=reply.context_id, state=state, agent_name=agent.name
        )
    said = f": {reply.text}" if reply.text else " without giving a reason"
    raise A2ATaskError(
        f"remote agent {agent.name!r} ended task {reply.task_id} {reply.state}{said}; {_FAILURE_FIXES[reply.state]}."
    )


async def _cancel_remote(endpoint: Endpoint, dialect: wire.Dialect, task_id: str | None) -> None:
    """Best effort: a delegation that is no longer wanted should not keep the remote agent busy."""
    if task_id is None:
        return
    try:
        await asyncio.wait_for(endpoint.call(dialect.cancel_method, dialect.task_params(task_id)), CANCEL_WAIT_SECONDS)
    except (TimeoutError, A2AError) as err:
        activity.logger.info("could not cancel remote task %s: %s", task_id, err)


@contextlib.asynccontextmanager
async def _http(timeout_seconds: float) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_seconds), follow_redirects=True) as http:
        yield http


@contextlib.asynccontextmanager
async def _heartbeat() -> AsyncIterator[_Beat]:
    """Heartbeat on a timer while the delegation waits, so a dead worker is noticed and cancellation arrives."""
    beat = _Beat()
    async with heartbeating(
        HEARTBEAT_EVERY_SECONDS, lambda: activity.heartbeat(*([beat.task_id] if beat.task_id else []))
    ):
        yield beat
