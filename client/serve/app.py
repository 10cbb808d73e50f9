"""The routes of `stalwart serve`: `/api` for apps, `/` and `/static` for the page (client/web/).

The server holds no state of its own: every answer is read from Temporal through one `StalwartClient`, with the
project's data converter (so payloads encrypted with the workers' keys are read as the workers wrote them). Live
events come from a `Feed` (`feed.py`); every refusal is `{"error": {"code": ..., "message": ...}}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import (
    WorkflowFailureError,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateStage,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from stalwart.client.agent_files import load_agent
from stalwart.client.api import (
    DecisionRefused,
    InvalidRunInput,
    RunExists,
    SessionClosed,
    StalwartClient,
    retrying_while_continuing,
    session_continuing,
)
from stalwart.client.queries import InvalidQuery
from stalwart.client.reader import RunWithoutResult
from stalwart.client.serve.feed import Feed, Offset, PolledFeed, exists
from stalwart.client.serve.guards import Guard, OriginGuard
from stalwart.client.serve.openapi import Endpoint, document
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.approvals import ApprovalDecision, decision_problem
from stalwart.contracts.errors import ConfigurationError, RunFailed, UsageError
from stalwart.contracts.run import AgentResult

MAX_BODY_BYTES = 1024 * 1024
"""A message, a goal or an agent spec is text: 1 MiB is far more than a person types, and the default limit."""
KEEPALIVE_SECONDS = 15.0
"""A comment line on a quiet event stream, so proxies keep it open and a client that left is noticed."""
_WEB = ("stalwart.client", "web")


@dataclass(frozen=True)
class ServeSettings:
    """Who may call, and how much they may send."""

    token: str | None = None
    origins: Sequence[str] = ()
    max_body_bytes: int = MAX_BODY_BYTES
    agents_dir: Path | None = None
    """Agent files named by path must be inside this folder (None: any file the server can read)."""


class ApiError(Exception):
    """A refusal a route raises: its status, a code an app can branch on, and the reason in words."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers or None)


# -- request bodies --------------------------------------------------------------


class _Body(BaseModel):
    """A request body: no field it does not name, and each of the type it says (`"yes"` or 1 is no boolean, 7 no
    text), so a wrong shape is refused naming the field rather than read as something the app did not mean."""

    model_config = ConfigDict(extra="forbid", strict=True)


_B = TypeVar("_B", bound=_Body)


class StartRun(_Body):
    """A run: the agent (a file path on the server, or its spec as JSON) and its goal."""

    agent: str | None = Field(None, description="Path of an agent file (TOML) on the server")
    agent_spec: dict[str, Any] | None = Field(None, description="The agent spec itself, as `stalwart check` prints it")
    goal: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = Field(
        None,
        description="The run's id (default: AGENT-RANDOM): not an open run's; a closed run's unless reuse_id is false",
    )
    reuse_id: bool = Field(
        True, description="Whether a run_id of a run that has closed may name the new run (false: refused, 409)"
    )


class StartSession(_Body):
    """A session: the agent (a file path on the server, or its spec as JSON)."""

    agent: str | None = Field(None, description="Path of an agent file (TOML) on the server")
    agent_spec: dict[str, Any] | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = Field(None, description="The session's id (default: AGENT-session-RANDOM)")


class SendMessage(_Body):
    """A message for a session."""

    message: str
    wait: bool = Field(False, description="Answer with the turn's result once it ends, instead of at once (202)")


class Decide(_Body):
    """A person's decision on a tool call waiting for approval; a rejection needs a reason."""

    reason: str | None = None
    reviewer: str | None = None


# -- the routes ----------------------------------------------------------------


class _Api:
    def __init__(self, client: StalwartClient, feed: Feed, agents_dir: Path | None = None) -> None:
        self.client = client
        self.feed = feed
        self.agents_dir = agents_dir

    async def info(self, request: Request) -> Response:
        """This server: the Temporal namespace, where the Temporal UI is, the task queue."""
        return JSONResponse(
            {
                "namespace": self.client.temporal.namespace,
                "task_queue": self.client.task_queue,
                "temporal_ui": self.client.ui_url,
                "version": _version(),
            }
        )

    async def list_runs(self, request: Request) -> Response:
        """Recent runs and sessions, newest first.

        `query` narrows them with a Temporal visibility query, e.g. AgentStatus="waiting" for open sessions."""
        limit = _int_query(request, "limit", 50, 1, 1000)
        query = request.query_params.get("query") or None
        try:
            runs = await self.client.list(query, limit=limit)
        except InvalidQuery as err:
            said = err.__cause__.message if isinstance(err.__cause__, RPCError) else str(err)
            raise ApiError(
                400,
                "bad_query",
                f"Temporal refused the query {query!r}: {said} (a position counts from Stalwart's own conditions, "
                "put before yours); the syntax: https://docs.temporal.io/list-filter",
            ) from None
        return JSONResponse({"runs": [r.model_dump(mode="json") for r in runs]})

    async def start_run(self, request: Request) -> Response:
        """Start a run of an agent towards a goal."""
        body = await _read(request, StartRun)
        spec = _agent(body.agent, body.agent_spec, self.agents_dir)
        try:
            handle = await self.client.start(
                spec, body.goal, inputs=body.inputs, run_id=body.run_id, reuse_id=body.reuse_id
            )
        except RunExists as err:  # before UsageError, which it is too
            fix = "choose a new run_id, or leave it out for a fresh one"
            said = (
                f'a run with id {body.run_id} has closed, and "reuse_id": false keeps its id from naming another run: '
                f"{fix}"
                if err.closed
                else f"run {body.run_id} is running already: {fix}"
            )
            raise ApiError(409, "exists", said) from None
        except (InvalidRunInput, UsageError) as err:
            raise ApiError(400, "invalid_run", str(err)) from None
        return JSONResponse({"run_id": handle.run_id, "ui_url": handle.ui_url}, status_code=201)

    async def start_session(self, request: Request) -> Response:
        """Start a session of an agent: it stays open and answers each message as one turn."""
        body = await _read(request, StartSession)
        spec = _agent(body.agent, body.agent_spec, self.agents_dir)
        try:
            handle = await self.client.start_session(spec, session_id=body.session_id, inputs=body.inputs)
        except (InvalidRunInput, UsageError) as err:
            raise ApiError(400, "invalid_session", str(err)) from None
        except WorkflowAlreadyStartedError:
            raise ApiError(
                409, "exists", f"a session with id {body.session_id} is open already: send it messages instead"
            ) from None
        return JSONResponse({"session_id": handle.run_id, "ui_url": handle.ui_url}, status_code=201)

    async def send(self, request: Request) -> Response:
        """Send a message to a session.

        Answers 202 once the session has accepted it (follow the answer on the events stream), or, with `wait`,
        200 and the turn's result once the turn ends."""
        session_id = request.path_params["run_id"]
        body = await _read(request, SendMessage)
        await self._known(session_id)
        try:
            if body.wait:
                result = await self.client.session(session_id).send(body.message)
                return JSONResponse(result.model_dump(mode="json"))
            await _accepted(self.client, session_id, body.message)
        except WorkflowUpdateFailedError as err:
            raise ApiError(409, "message_refused", f"session {session_id} refused the message: {_cause(err)}") from None
        except (SessionClosed, RunFailed) as err:
            raise ApiError(409, "session_closed", str(err)) from None
        except RPCError as err:  # the id is known (above): Temporal's NOT_FOUND says the session has closed since
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            raise ApiError(
                409, "session_closed", f"session {session_id} has closed, so it takes no more messages: start a new one"
            ) from None
        return JSONResponse({"session_id": session_id, "accepted": True}, status_code=202)

    async def close(self, request: Request) -> Response:
        """Close a session once the messages it has are answered."""
        session_id = request.path_params["run_id"]
        await self._known(session_id)
        try:
            await self.client.temporal.get_workflow_handle(session_id).execute_update("close", result_type=str)
        except WorkflowUpdateFailedError as err:
            raise ApiError(409, "close_refused", f"session {session_id} cannot close: {_cause(err)}") from None
        return JSONResponse({"session_id": session_id, "closing": True}, status_code=202)

    async def state(self, request: Request) -> Response:
        """The step log, status and usage of a run or session, running or finished."""
        run_id = request.path_params["run_id"]
        await self._known(run_id)
        handle = self.client.get(run_id)
        try:
            state = await handle.state()
        except (RunWithoutResult, RunFailed) as err:
            raise ApiError(409, "no_result", str(err)) from None
        return JSONResponse({**state.model_dump(mode="json"), "run_id": run_id, "ui_url": handle.ui_url})

    async def result(self, request: Request) -> Response:
        """The result of a finished run: answer, stop reason, steps, usage, and `output` where the result has one."""
        run_id = request.path_params["run_id"]
        await self._known(run_id)
        handle = self.client.get(run_id)
        if (await handle.describe()).running:
            raise ApiError(
                409, "running", f"run {run_id} is still running: follow /api/runs/{run_id}/events, or ask again later"
            )
        try:
            result: AgentResult = await handle.result()
        except (WorkflowFailureError, RunFailed) as err:
            raise ApiError(409, "failed", f"run {run_id} failed: {err}") from None
        return JSONResponse({**result.model_dump(mode="json"), "run_id": run_id})

    async def events(self, request: Request) -> Response:
        """Follow a run or session as Server-Sent Events.

        Each event's `id` is an offset (`run.records-chars-digest`); send the last one back as `Last-Event-ID` (or
        `?after=`) to get exactly what followed it, or, when it is no point of this run, a `reset` and the run from
        its start. Events: step, delta, retract, reset, state, approvals, end (docs/serve.md)."""
        run_id = request.path_params["run_id"]
        given = request.headers.get("last-event-id") or request.query_params.get("after")
        try:
            after = Offset.parse(given) if given else Offset()
        except ValueError as err:
            raise ApiError(400, "bad_offset", str(err)) from None
        await self._known(run_id)
        return StreamingResponse(
            _sse(self.feed.events(run_id, after)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def all_approvals(self, request: Request) -> Response:
        """Tool calls waiting for a person's decision, in every run; with `limit`, in the newest runs that many,
        and `more` says whether older ones wait too."""
        limit = _int_query(request, "limit", 0, 1, 10_000) or None
        waiting = await self.client.awaiting_approval(limit=None if limit is None else limit + 1)
        more = limit is not None and len(waiting) > limit
        return JSONResponse(
            {
                "runs": [
                    {"run_id": run_id, "pending": [p.model_dump(mode="json") for p in pending]}
                    for run_id, pending in waiting[:limit]
                    if pending
                ],
                "more": more,
            }
        )

    async def run_approvals(self, request: Request) -> Response:
        """Tool calls of one run waiting for a person's decision."""
        run_id = request.path_params["run_id"]
        await self._known(run_id)
        pending = await self.client.get(run_id).pending_approvals()
        return JSONResponse({"run_id": run_id, "pending": [p.model_dump(mode="json") for p in pending]})

    async def approve(self, request: Request) -> Response:
        """Let a tool call that waits for approval run."""
        return await self._decide(request, approve=True)

    async def reject(self, request: Request) -> Response:
        """Refuse a tool call that waits for approval; the model reads the reason as the call's result."""
        return await self._decide(request, approve=False)

    async def _decide(self, request: Request, *, approve: bool) -> Response:
        run_id, call_id = request.path_params["run_id"], request.path_params["call_id"]
        body = await _read(request, Decide, empty_ok=True)
        if not approve and not (body.reason or "").strip():
            raise ApiError(
                400, "reason_required", "a rejection needs a reason: the model reads it as the call's result"
            )
        problem = decision_problem(ApprovalDecision(call_id=call_id, reason=body.reason, reviewer=body.reviewer))
        if problem is not None:
            raise ApiError(400, "bad_decision", problem)
        await self._known(run_id)
        handle = self.client.get(run_id)
        try:
            if approve:
                await handle.approve(call_id, reason=body.reason, reviewer=body.reviewer)
            else:
                await handle.reject(call_id, reason=body.reason or "", reviewer=body.reviewer)
        except WorkflowUpdateFailedError as err:
            earlier = err.decided if isinstance(err, DecisionRefused) else None
            if earlier is not None:
                raise ApiError(
                    409,
                    "already_decided",
                    f"tool call {call_id!r} of run {run_id} has been {earlier} already: a call is decided once; "
                    f"GET /api/runs/{run_id} shows what it did",
                ) from None
            if not (await handle.describe()).running:  # the Python API says a closed run's refusal this way too
                return await _not_found(self.client, run_id)
            raise ApiError(
                404, "no_such_call", f"run {run_id} has no call {call_id} waiting for approval: {_cause(err)}"
            ) from None
        return JSONResponse({"run_id": run_id, "call_id": call_id, "decision": "approved" if approve else "rejected"})

    async def _known(self, run_id: str) -> None:
        if not await exists(self.client, run_id):
            raise ApiError(404, "not_found", f"no run or session has the id {run_id!r}")


async def _accepted(client: StalwartClient, session_id: str, message: str) -> None:
    """Hand `message` to the session and return once it accepted it (its turn runs on); a session continuing as new
    takes no message for a moment, so that refusal is tried again for up to a minute."""
    handle = client.temporal.get_workflow_handle(session_id)

    async def accepted() -> None:
        update = await handle.start_update(
            "send", message, wait_for_stage=WorkflowUpdateStage.ACCEPTED, result_type=AgentResult
        )
        await _raise_if_rejected(update)

    try:
        await retrying_while_continuing(accepted, patience_seconds=60.0)
    except WorkflowUpdateFailedError as err:
        if session_continuing(err):
            raise ApiError(
                503, "session_busy", f"session {session_id} kept continuing as new: send the message again"
            ) from None
        raise


async def _raise_if_rejected(update: WorkflowUpdateHandle[Any]) -> None:
    """Raise the `WorkflowUpdateFailedError` of an update its validator rejected.

    The server answers a rejected update at once, as completed with its failure, yet `start_update` returns the
    handle as for an accepted one and keeps the failure for `result()` (temporalio 1.35): read as accepted, a message
    the session refused (empty, too long, the session closing, not a session) was answered 202 and dropped. With the
    outcome known, `result()` raises it without a call to the server; an accepted update has no outcome yet, and is
    not waited for.
    """
    outcome = getattr(update, "_known_outcome", None)
    if outcome is not None and outcome.HasField("failure"):
        await update.result()


def _cause(err: WorkflowUpdateFailedError) -> str:
    cause = err.cause
    return str(getattr(cause, "message", None) or cause or err)


def _agent(path: str | None, spec: dict[str, Any] | None, agents_dir: Path | None) -> AgentSpec:
    if path is not None and spec is not None:
        raise ApiError(
            400,
            "agent_twice",
            "give the agent once: as `agent` (a file path on the server) or as `agent_spec`, not both",
        )
    if path is None and spec is None:
        raise ApiError(400, "agent_required", "give the agent as `agent` (a file path on the server) or `agent_spec`")
    if spec is not None:
        try:
            return AgentSpec.model_validate(spec)
        except ValidationError as err:
            raise ApiError(400, "invalid_agent", f"the agent spec is not valid: {_problems(err)}") from None
    file = Path(path or "")
    if agents_dir is not None:
        file = (agents_dir / file).resolve()  # a relative path is read from the folder, as a person means it
        if not file.is_relative_to(agents_dir.resolve()):
            raise ApiError(
                403,
                "agent_outside",
                f"{path} is outside {agents_dir}, the folder this server reads agent files from (--agents-dir); "
                "send the agent as `agent_spec` instead",
            )
    try:
        return load_agent(file)
    except (UsageError, OSError) as err:
        raise ApiError(400, "invalid_agent", str(err)) from None


async def _read(request: Request, kind: type[_B], *, empty_ok: bool = False) -> _B:
    raw = await request.body()
    if not raw.strip() and empty_ok:
        return kind()
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise ApiError(400, "malformed_json", f"the body is not JSON: {err}") from None
    except RecursionError:
        raise ApiError(400, "malformed_json", "the body's JSON nests too deeply to read: send flatter JSON") from None
    try:
        return kind.model_validate(data)
    except ValidationError as err:
        raise ApiError(400, "invalid_body", f"{kind.__doc__ or kind.__name__} {_problems(err)}") from None


def _problems(err: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in err.errors(include_url=False)
    )


def _int_query(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise ApiError(400, "bad_parameter", f"{name} must be a whole number from {low} to {high}, not {text!r}")
    return int(text)


async def _sse(events: AsyncIterator[tuple[Offset, Any]]) -> AsyncIterator[bytes]:
    """Events as `text/event-stream`, with a comment line whenever nothing was sent for `KEEPALIVE_SECONDS`."""
    iterator = aiter(events)
    pending: asyncio.Future[Any] | None = None
    yield b"retry: 1000\n\n"
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
            if not done:
                yield b": keepalive\n\n"
                continue
            try:
                offset, event = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            data = json.dumps(event.data, separators=(",", ":"))
            yield f"id: {offset}\nevent: {event.kind}\ndata: {data}\n\n".encode()
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


def _version() -> str:
    try:
        return metadata.version("stalwart")
    except metadata.PackageNotFoundError:
        return "0"


# -- the application -------------------------------------------------------------


def endpoints(api: _Api) -> list[Endpoint]:
    """Every `/api` route; the OpenAPI document is made from this list."""
    limit = ("limit", "integer", "how many, at most")
    created = {201: "started"}
    return [
        Endpoint("/api/info", "GET", api.info),
        Endpoint("/api/runs", "GET", api.list_runs, query=[limit, ("query", "string", "a visibility query")]),
        Endpoint("/api/runs", "POST", api.start_run, body=StartRun, answers=created),
        Endpoint("/api/sessions", "POST", api.start_session, body=StartSession, answers=created),
        Endpoint(
            "/api/sessions/{run_id}/messages",
            "POST",
            api.send,
            body=SendMessage,
            answers={202: "accepted", 200: "with wait: the turn's result"},
        ),
        Endpoint("/api/sessions/{run_id}/close", "POST", api.close, answers={202: "closing"}),
        Endpoint("/api/runs/{run_id}", "GET", api.state),
        Endpoint("/api/runs/{run_id}/result", "GET", api.result),
        Endpoint(
            "/api/runs/{run_id}/events",
            "GET",
            api.events,
            query=[("after", "string", "an offset, as Last-Event-ID")],
            media_type="text/event-stream",
        ),
        Endpoint("/api/approvals", "GET", api.all_approvals, query=[limit]),
        Endpoint("/api/runs/{run_id}/approvals", "GET", api.run_approvals),
        Endpoint("/api/runs/{run_id}/approvals/{call_id}/approve", "POST", api.approve, body=Decide),
        Endpoint("/api/runs/{run_id}/approvals/{call_id}/reject", "POST", api.reject, body=Decide),
    ]


def serve_app(client: StalwartClient, settings: ServeSettings, feed: Feed | None = None) -> Starlette:
    """The ASGI application of `stalwart serve`, on `client` (which must live on the loop that serves it)."""
    feed = feed or PolledFeed(client)
    api = _Api(client, feed, settings.agents_dir)
    table = endpoints(api)
    openapi = document(table, version=_version())

    async def openapi_json(request: Request) -> Response:
        return JSONResponse(openapi)

    async def page(request: Request) -> Response:
        return FileResponse(_web_file("index.html"), headers={"Cache-Control": "no-cache"})

    routes: list[Any] = [Route(e.path, _answering(e.handler, client), methods=[e.method]) for e in table]
    routes += [
        Route("/api/openapi.json", openapi_json, methods=["GET"]),
        Route("/", page, methods=["GET"]),
        Mount("/static", StaticFiles(packages=[_WEB]), name="static"),
    ]
    middleware = [
        Middleware(OriginGuard, origins=list(settings.origins)),
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            max_age=600,
        ),
        Middleware(Guard, token=settings.token, max_body_bytes=settings.max_body_bytes),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        if status == 405:
            return error(405, "method_not_allowed", f"{request.method} is not served at {request.url.path}")
        where = request.url.path
        return error(status, "not_found", f"nothing is served at {where}: GET /api/openapi.json lists the API")

    async def failed(request: Request, exc: Exception) -> Response:
        # A bug, not a refusal: still JSON, so an app reads it like every other answer; the traceback is logged.
        return error(500, "internal_error", f"the server failed on {request.method} {request.url.path}: {exc!r}")

    async def shutdown() -> None:
        closing = getattr(feed, "close", None)
        if closing is not None:
            await closing()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await shutdown()

    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: not_found, Exception: failed},
        lifespan=lifespan,
    )


def _answering(
    handler: Callable[[Request], Awaitable[Response]], client: StalwartClient
) -> Callable[[Request], Awaitable[Response]]:
    """The route, with what it raises said as the API's JSON error."""

    async def route(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as err:
            return error(err.status, err.code, err.message)
        except RPCError as err:
            run_id = request.path_params.get("run_id")
            if err.status == RPCStatusCode.NOT_FOUND and run_id:
                return await _not_found(client, run_id)
            if err.status == RPCStatusCode.INVALID_ARGUMENT:  # what was sent, as Temporal checks it (an id too long)
                return error(400, "invalid_argument", f"Temporal refused the request as sent: {err.message}")
            return error(502, "temporal_error", f"Temporal did not answer as expected ({err.message}); try again")
        except ConfigurationError as err:  # this server's settings (its encryption keys, its storage)
            return error(500, "configuration_error", str(err.args[0]) if err.args else str(err))
        except (ConnectionError, TimeoutError) as err:
            return error(503, "temporal_unavailable", f"cannot reach Temporal: {err}; try again")

    route.__name__ = handler.__name__
    route.__doc__ = handler.__doc__
    return route


async def _not_found(client: StalwartClient, run_id: str) -> Response:
    """Temporal's NOT_FOUND for a request to `run_id`: an unknown id, or a run that has closed (Temporal says
    NOT_FOUND to a message, a decision or a close sent to a closed run as well)."""
    try:
        known = await exists(client, run_id)
    except (RPCError, ConnectionError, TimeoutError):
        known = False
    if known:
        return error(
            409,
            "closed",
            f"run {run_id} has closed, so it takes no more messages, decisions or closing: "
            f"GET /api/runs/{run_id} shows how it ended",
        )
    return error(404, "not_found", f"no run or session has the id {run_id!r}")


def _web_file(name: str) -> str:
    return str(files(_WEB[0]).joinpath(_WEB[1], name))
