"""Serve a Stalwart agent over A2A, so any A2A client (another Stalwart, a2a-sdk, ADK...) can delegate to it.

The card comes from the agent spec. A message starts a durable run (an
AgentWorkflow) whose workflow id is the A2A task id, derived from the
message id so a client that resends a message gets the same run instead of
a second one. `tasks/get` reads the run from Temporal, so the server holds no
state: restart it, or run several, and every task is still there.

Both protocol versions are served on one endpoint, told apart by method
name: 1.0 (`SendMessage`, `GetTask`, `CancelTask`; card at
`/.well-known/agent-card.json`) and 0.3 (`message/send`, `tasks/get`,
`tasks/cancel`; card also at `/.well-known/agent.json`).

Run it: `python -m stalwart.client.a2a_server agents/researcher.toml --port 9999`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from stalwart.activities import telemetry
from stalwart.activities.storage.config import StorageSettingError
from stalwart.activities.storage.encryption import EncryptionKeyError
from stalwart.client.agent_files import load_agent
from stalwart.client.api import InvalidRunInput, StalwartClient
from stalwart.contracts import names
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.contracts.tracing import TracingSettingError
from stalwart.workers.process_exit import exit_now

CONTEXT_INPUT = "a2a_context_id"
"""The run input that keeps the A2A context id, so `tasks/get` can give it back after a restart."""
BLOCKING_WAIT_SECONDS = 60.0
"""How long a blocking send waits for the run before answering with the task still working."""

_BUDGET_STOPS = {"max_steps", "max_seconds", "max_tokens", "max_cost"}
_V1 = {"SendMessage": "send", "GetTask": "get", "CancelTask": "cancel"}
_V03 = {"message/send": "send", "tasks/get": "get", "tasks/cancel": "cancel"}


class RpcError(Exception):
    """A JSON-RPC error for the caller; codes are A2A's."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class TaskView:
    """A run as an A2A task: its state, the answer (completed) or the reason (failed), its context."""

    id: str
    context_id: str
    state: str
    text: str = ""
    output: Any = None
    """A completed run's typed output (`[output]`): the answer's artifact is then this value, as a data part."""
    typed: bool = False
    """Whether `output` is the run's typed output, so that a `null` one is sent as data too, not as text."""


class A2AAgentServer:
    """One Stalwart agent as an A2A agent; `app()` is the ASGI application."""

    def __init__(
        self,
        stalwart: StalwartClient,
        agent: AgentSpec,
        *,
        public_url: str,
        blocking_wait_seconds: float = BLOCKING_WAIT_SECONDS,
    ) -> None:
        self.stalwart = stalwart
        self.agent = agent
        self.public_url = public_url.rstrip("/") + "/"
        self.blocking_wait_seconds = blocking_wait_seconds
        self._cancelled: set[str] = set()
        """Tasks this server cancelled: their runs may stay RUNNING a moment while they wind down."""

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/agent-card.json", self._card_v1, methods=["GET"]),
                Route("/.well-known/agent.json", self._card_v03, methods=["GET"]),
                Route("/", self._rpc, methods=["POST"]),
            ]
        )

    # -- cards ---------------------------------------------------------------

    def card(self, version: str) -> dict[str, Any]:
        """The agent card: 1.0 lists both interfaces; 0.3 names the endpoint in `url`."""
        description = self.agent.description or next(iter(self.agent.instructions.strip().splitlines()), "")
        card: dict[str, Any] = {
            "name": self.agent.name,
            "description": description,
            "version": "1.0.0",
            "capabilities": {"streaming": False, "pushNotifications": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["application/json"] if self.agent.output is not None else ["text/plain"],
            "skills": [
                {
                    "id": self.agent.name,
                    "name": self.agent.name,
                    "description": description,
                    "tags": list(self.agent.tools),
                    "examples": [],
                }
            ],
        }
        if version == "1.0":
            card["supportedInterfaces"] = [
                {"url": self.public_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": self.public_url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            ]
        else:
            card.update(protocolVersion="0.3.0", url=self.public_url, preferredTransport="JSONRPC")
        return card

    async def _card_v1(self, request: Request) -> Response:
        return JSONResponse(self.card("1.0"))

    async def _card_v03(self, request: Request) -> Response:
        return JSONResponse(self.card("0.3"))

    # -- JSON-RPC ------------------------------------------------------------

    async def _rpc(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _rpc_error(None, RpcError(-32700, "Parse error: the body is not JSON"))
        rpc_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
            return _rpc_error(rpc_id, RpcError(-32600, "Invalid Request: send a JSON-RPC 2.0 request object"))
        method, params = body["method"], body.get("params")
        version = "1.0" if method in _V1 else "0.3"
        operation = _V1.get(method) or _V03.get(method)
        try:
            if operation is None:
                raise RpcError(-32601, f"Method not found: {method}; this agent serves {', '.join([*_V1, *_V03])}")
            if not isinstance(params, dict):
                raise RpcError(-32602, "Invalid params: `params` must be an object")
            with telemetry.incoming_trace(request.headers):  # a traced caller's run is the parent of ours
                result = await getattr(self, f"_{operation}")(params, version)
        except RpcError as err:
            return _rpc_error(rpc_id, err)
        return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result})

    async def _send(self, params: dict[str, Any], version: str) -> dict[str, Any]:
        text, message_id, context_id, task_id = _incoming(params.get("message"), version)
        if task_id is not None:
            raise RpcError(
                -32004,
                f"Unsupported operation: task {task_id} cannot take more input; send a new message without taskId",
            )
        context_id = context_id or uuid.uuid4().hex
        run_id = self._run_id(message_id)
        handle = self._handle(run_id)
        if not await self._started(handle):
            try:
                await self.stalwart.start(self.agent, text, inputs={CONTEXT_INPUT: context_id}, run_id=run_id)
            except WorkflowAlreadyStartedError:
                pass  # the same message, sent twice at once: both callers follow the one run
            except InvalidRunInput as err:  # a message longer than the agent takes as a goal
                raise RpcError(-32602, f"Invalid params: {err}") from None
            except RPCError as err:
                raise _temporal_error(err) from None
        if _blocking(params, version):
            try:
                await asyncio.wait_for(handle.result(), self.blocking_wait_seconds)
            except Exception:
                pass
        task = _task_json(await self._view(run_id), version)
        return task if version == "0.3" else {"task": task}

    async def _get(self, params: dict[str, Any], version: str) -> dict[str, Any]:
        return _task_json(await self._view(_task_id(params)), version)

    async def _cancel(self, params: dict[str, Any], version: str) -> dict[str, Any]:
        task_id = _task_id(params)
        view = await self._view(task_id)
        if view.state != "working":
            raise RpcError(-32002, f"Task not cancelable: task {task_id} is already {view.state}")
        try:
            await self._handle(task_id).cancel()
        except RPCError as err:
            raise _temporal_error(err) from None
        self._cancelled.add(task_id)
        return _task_json(TaskView(task_id, view.context_id, "canceled", "the run was cancelled"), version)

    # -- runs ----------------------------------------------------------------

    def _run_id(self, message_id: str) -> str:
        return f"a2a-{self.agent.name}-{hashlib.sha256(message_id.encode()).hexdigest()[:24]}"

    def _handle(self, run_id: str) -> WorkflowHandle[Any, AgentResult]:
        return self.stalwart.temporal.get_workflow_handle(run_id, result_type=AgentResult)

    async def _started(self, handle: WorkflowHandle[Any, Any]) -> bool:
        """Whether the run exists, running or closed: a resent message follows it instead of starting another.

        Temporal's default id-reuse policy would start a second run once the first has closed, so look first.
        """
        try:
            await handle.describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise _temporal_error(err) from None
        return True

    async def _view(self, task_id: str) -> TaskView:
        """Read the run behind a task from Temporal: its status, and its answer or error once it has ended."""
        if not task_id.startswith(f"a2a-{self.agent.name}-"):
            raise RpcError(-32001, f"Task not found: {task_id}")
        handle = self._handle(task_id)
        try:
            description = await handle.describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                raise RpcError(-32001, f"Task not found: {task_id}") from None
            raise _temporal_error(err) from None
        context_id = await self._context_id(handle) or task_id
        status = description.status
        if status in (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW):
            # A cancel was confirmed to the caller: the task is canceled from then on, though the run may take a
            # moment to wind down (its activities and sub-agents are cancelled first).
            if task_id in self._cancelled or await self._cancel_requested(handle):
                return TaskView(task_id, context_id, "canceled", "the run was cancelled")
            return TaskView(task_id, context_id, "working")
        if status == WorkflowExecutionStatus.COMPLETED:
            return _ended(task_id, context_id, await handle.result(), typed=self.agent.output is not None)
        if status == WorkflowExecutionStatus.CANCELED:
            return TaskView(task_id, context_id, "canceled", "the run was cancelled")
        reason = status.name.lower().replace("_", " ") if status else "unknown"
        return TaskView(task_id, context_id, "failed", f"the run ended {reason}")

    async def _cancel_requested(self, handle: WorkflowHandle[Any, Any]) -> bool:
        """Whether anyone (another server, `temporal workflow cancel`) asked Temporal to cancel the running run.

        A cancel request is among the newest events of a run still winding down, so the history is read newest
        first, one page; a server without that call (the time-skipping test server) is read from the start.
        """
        client = self.stalwart.temporal
        try:
            newest = await client.workflow_service.get_workflow_execution_history_reverse(
                GetWorkflowExecutionHistoryReverseRequest(
                    namespace=client.namespace,
                    execution=WorkflowExecution(workflow_id=handle.id),
                    maximum_page_size=_CANCEL_LOOKBACK_EVENTS,
                )
            )
            events = list(newest.history.events)
        except RPCError as err:
            if err.status != RPCStatusCode.UNIMPLEMENTED:
                raise _temporal_error(err) from None
            events = [event async for event in handle.fetch_history_events()]
        return any(e.HasField("workflow_execution_cancel_requested_event_attributes") for e in events)

    async def _context_id(self, handle: WorkflowHandle[Any, Any]) -> str | None:
        """The context id kept in the run's input (its first history event)."""
        async for event in handle.fetch_history_events(page_size=1):
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            if not payloads:
                return None
            [run_input] = await self.stalwart.temporal.data_converter.decode(payloads, [RunInput])
            value = run_input.inputs.get(CONTEXT_INPUT)
            return value if isinstance(value, str) else None
        return None


_CANCEL_LOOKBACK_EVENTS = 200


def _temporal_error(err: RPCError) -> RpcError:
    return RpcError(-32603, f"Internal error: Temporal did not answer ({err}); try again")


def _ended(task_id: str, context_id: str, result: AgentResult, *, typed: bool) -> TaskView:
    """A finished run as a task: an answer is `completed`; a stop without one is `failed` with the reason. The
    answer of an agent with `[output]` (`typed`) that ended `done` is its output, whatever JSON value that is."""
    answered = any(step.final for step in result.steps)
    if result.stop_reason == "done" or (result.stop_reason in _BUDGET_STOPS and answered):
        as_data = (typed and result.stop_reason == "done") or result.output is not None
        return TaskView(task_id, context_id, "completed", result.answer, result.output, as_data)
    if result.stop_reason == "cancelled":
        return TaskView(task_id, context_id, "canceled", "the run was cancelled")
    if result.stop_reason in _BUDGET_STOPS:
        return TaskView(
            task_id,
            context_id,
            "failed",
            f"the run stopped at its {result.stop_reason} budget: {result.answer}".rstrip(": "),
        )
    return TaskView(task_id, context_id, "failed", result.error or "the run failed")


def _incoming(message: Any, version: str) -> tuple[str, str, str | None, str | None]:
    """The text and ids of a client message; what breaks the protocol is an invalid-params error."""
    if not isinstance(message, dict) or not isinstance(message.get("messageId"), str) or not message["messageId"]:
        raise RpcError(-32602, "Invalid params: message.messageId is required")
    if message.get("role") not in ("ROLE_USER", "user"):
        raise RpcError(-32602, "Invalid params: the message must come from the user role")
    parts = message.get("parts")
    texts = [p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if not texts:
        raise RpcError(-32005, "Content type not supported: send the task as text parts")
    return "\n".join(texts), message["messageId"], message.get("contextId"), message.get("taskId")


def _blocking(params: dict[str, Any], version: str) -> bool:
    """Both versions block by default: 1.0 unless `returnImmediately`, 0.3 unless `blocking` is false."""
    configuration = params.get("configuration") or {}
    if version == "1.0":
        return not configuration.get("returnImmediately", False)
    return bool(configuration.get("blocking", True))


def _task_id(params: dict[str, Any]) -> str:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(-32602, "Invalid params: `id` (the task id) is required")
    return task_id


def _task_json(view: TaskView, version: str) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    state = f"TASK_STATE_{view.state.upper()}" if version == "1.0" else view.state
    status: dict[str, Any] = {"state": state, "timestamp": now}
    task: dict[str, Any] = {"id": view.id, "contextId": view.context_id, "status": status}
    if view.state == "completed":
        part = _data_part(view.output, version) if view.typed else _part(view.text, version)
        task["artifacts"] = [{"artifactId": f"{view.id}-answer", "name": "answer", "parts": [part]}]
    elif view.text:
        message = {
            "messageId": uuid.uuid4().hex,
            "taskId": view.id,
            "contextId": view.context_id,
            "parts": [_part(view.text, version)],
        }
        status["message"] = (
            {**message, "role": "ROLE_AGENT"} if version == "1.0" else {**message, "role": "agent", "kind": "message"}
        )
    return task if version == "1.0" else {**task, "kind": "task"}


def _part(text: str, version: str) -> dict[str, Any]:
    return {"text": text} if version == "1.0" else {"kind": "text", "text": text}


def _data_part(value: Any, version: str) -> dict[str, Any]:
    """Typed output as a data part: 1.0 takes any JSON value; 0.3's data is an object, so another value is
    wrapped as its `result`, as the providers are asked for it."""
    if version == "1.0":
        return {"data": value, "mediaType": "application/json"}
    return {"kind": "data", "data": value if isinstance(value, dict) else {"result": value}}


def _rpc_error(rpc_id: Any, error: RpcError) -> JSONResponse:
    return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": error.code, "message": str(error)}})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Serve a Stalwart agent over the A2A protocol (JSON-RPC, A2A 1.0 and 0.3)."
    )
    parser.add_argument("agent_file", help="the agent's TOML file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--public-url", help="the URL clients reach this server at (default http://HOST:PORT/)")
    parser.add_argument("--task-queue", default=names.TASK_QUEUE, help="where Stalwart workers listen")
    args = parser.parse_args(argv)
    agent = load_agent(args.agent_file)

    async def serve() -> None:
        # The Temporal client must live on the loop that serves requests, so both start here.
        stalwart = await StalwartClient.connect(task_queue=args.task_queue)
        server = A2AAgentServer(stalwart, agent, public_url=args.public_url or f"http://{args.host}:{args.port}/")
        await uvicorn.Server(uvicorn.Config(server.app(), host=args.host, port=args.port)).serve()

    try:
        asyncio.run(serve())
    except (ConnectionError, EncryptionKeyError, StorageSettingError, TracingSettingError) as err:
        # A setting to fix, said as `stalwart` says it: one line, no traceback. The exit skips interpreter teardown
        # as `stalwart` does: a client that failed to connect leaves Temporal's core threads behind, and finalizing
        # under them aborted the process now and then on a busy machine (workers/process_exit.py).
        sys.stderr.write(f"error: {err}\n")
        exit_now(1)


if __name__ == "__main__":
    main()
