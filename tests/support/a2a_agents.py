"""Remote agents for the tests: a real A2A server over HTTP (a Starlette app, served by `support.a2a_http.serving`).

It speaks the protocol as a2a-sdk 1.x does on the wire: the agent card at
`/.well-known/agent-card.json` (or only the legacy `/.well-known/agent.json`
for the 0.3 agent), JSON-RPC 2.0 over POST with `SendMessage`/`GetTask`/
`CancelTask` and the `A2A-Version: 1.0` header for 1.0 agents, and
`message/send`/`tasks/get`/`tasks/cancel` with `kind`-tagged objects for 0.3.
Requests that break the protocol get the JSON-RPC errors a real server sends,
so a client mistake fails the test instead of passing silently.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stalwart.workers.dev_server import free_port

Behaviour = Literal["reply", "work", "fail", "ask", "busy"]


@dataclass
class RemoteAgent:
    """One agent of the server, at `/<name>`.

    reply: answers SendMessage with a Message at once.
    work:  returns a working Task that completes after `polls` GetTask calls.
    fail:  returns a working Task that fails on the first GetTask.
    ask:   returns a Task in input-required; the answer (same taskId) completes it.
    busy:  answers the first `busy_for` JSON-RPC calls with HTTP 429 + Retry-After, then replies.

    With `hiccup`, the first GetTask of each task gets HTTP 503, as from a restarting server.
    With `token`, JSON-RPC calls without `Authorization: Bearer <token>` get HTTP 401 (the card stays public).
    """

    name: str
    behaviour: Behaviour
    version: Literal["1.0", "0.3"] = "1.0"
    polls: int = 3
    busy_for: int = 1
    retry_after: str = "7"
    description: str = "A test agent."
    token: str | None = None
    hiccup: bool = False
    skills: list[dict[str, Any]] = field(default_factory=list)


RESEARCH_SKILL = {
    "id": "research",
    "name": "Research",
    "description": "Finds and summarises sources on a topic.",
    "tags": ["search"],
    "examples": ["Find papers on qubits"],
}


def roster() -> list[RemoteAgent]:
    """One agent of each behaviour, as the tests use them."""
    return [
        RemoteAgent("echo", "reply", description="Repeats what it is told.", skills=[RESEARCH_SKILL]),
        RemoteAgent("researcher", "work", polls=3),
        RemoteAgent("broken", "fail"),
        RemoteAgent("asker", "ask"),
        RemoteAgent("busy", "busy"),
        RemoteAgent("legacy", "work", version="0.3", polls=2, description="Speaks A2A 0.3."),
        RemoteAgent("endless", "work", polls=10**9),
        RemoteAgent("hiccup", "work", polls=3, hiccup=True),
        RemoteAgent("private", "reply", token="s3cret"),
    ]


@dataclass
class _Task:
    id: str
    context_id: str
    state: str
    text: str
    polls: int = 0
    answer: str = ""
    question: str = ""


class A2AServer:
    """The agents, their tasks, and what they were asked, served on 127.0.0.1."""

    def __init__(self, agents: list[RemoteAgent], port: int | None = None) -> None:
        self.agents = {a.name: a for a in agents}
        self.port = port or free_port()
        self.tasks: dict[str, _Task] = {}
        self.calls: Counter[tuple[str, str]] = Counter()
        """(agent, JSON-RPC method) -> number of calls."""
        self.message_ids: list[str] = []
        self.canceled: list[str] = []

    def url(self, agent: str) -> str:
        return f"http://127.0.0.1:{self.port}/{agent}"

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/{agent}/.well-known/{card}", self._card, methods=["GET"]),
                Route("/{agent}/rpc", self._rpc, methods=["POST"]),
            ]
        )

    # -- HTTP ----------------------------------------------------------------

    async def _card(self, request: Request) -> Response:
        agent = self.agents.get(request.path_params["agent"])
        wanted = "agent.json" if agent is not None and agent.version == "0.3" else "agent-card.json"
        if agent is None or request.path_params["card"] != wanted:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        rpc = f"{self.url(agent.name)}/rpc"
        card: dict[str, Any] = {
            "name": agent.name,
            "description": agent.description,
            "version": "1.2.3",
            "capabilities": {"streaming": False, "pushNotifications": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": agent.skills,
        }
        if agent.version == "1.0":
            card["supportedInterfaces"] = [
                {"url": f"{self.url(agent.name)}/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            ]
        else:
            card.update(protocolVersion="0.3.0", url=rpc, preferredTransport="JSONRPC")
        return JSONResponse(card)

    async def _rpc(self, request: Request) -> Response:
        agent = self.agents.get(request.path_params["agent"])
        if agent is None:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        try:
            body = await request.json()
        except ValueError:
            return _error(None, -32700, "Parse error")
        rpc_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
            return _error(rpc_id, -32600, "Invalid Request")
        method, params = body["method"], body.get("params")
        self.calls[(agent.name, method)] += 1
        if agent.token is not None and request.headers.get("Authorization") != f"Bearer {agent.token}":
            return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)
        if (
            agent.behaviour == "busy"
            and sum(n for (a, _), n in self.calls.items() if a == agent.name) <= agent.busy_for
        ):
            return JSONResponse({"detail": "slow down"}, status_code=429, headers={"Retry-After": agent.retry_after})
        if agent.version == "1.0" and request.headers.get("A2A-Version", "").split(".")[:2] != ["1", "0"]:
            return _error(rpc_id, -32009, "Version not supported: send A2A-Version: 1.0")
        methods = _V1_METHODS if agent.version == "1.0" else _V03_METHODS
        if method not in methods:
            return _error(rpc_id, -32601, f"Method not found: {method}")
        if not isinstance(params, dict):
            return _error(rpc_id, -32602, "Invalid params")
        try:
            result = getattr(self, methods[method])(agent, params)
        except _RpcError as err:
            return _error(rpc_id, err.code, str(err))
        except _HttpError as err:
            return JSONResponse({"detail": str(err)}, status_code=err.status)
        return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result})

    # -- methods -------------------------------------------------------------

    def _send(self, agent: RemoteAgent, params: dict[str, Any]) -> dict[str, Any]:
        text, message_id, context_id, task_id = _incoming(agent, params.get("message"))
        self.message_ids.append(message_id)
        context_id = context_id or uuid.uuid4().hex
        if agent.behaviour in ("reply", "busy"):
            reply = {
                "messageId": uuid.uuid4().hex,
                "contextId": context_id,
                "role": "agent",
                "parts": [_text(agent, f"echo: {text}")],
            }
            return _wrap(agent, "message", reply)
        if task_id is not None:
            task = self.tasks.get(task_id)
            if task is None:
                raise _RpcError(-32001, f"Task not found: {task_id}")
            task.state, task.answer = "completed", f"answer for {task.question!r}: {text}"
            return _wrap(agent, "task", self._task_json(agent, task))
        task = _Task(id=uuid.uuid4().hex, context_id=context_id, state="working", text=text)
        if agent.behaviour == "ask":
            task.state, task.question = "input-required", "Which year do you mean?"
        self.tasks[task.id] = task
        return _wrap(agent, "task", self._task_json(agent, task))

    def _get(self, agent: RemoteAgent, params: dict[str, Any]) -> dict[str, Any]:
        task = self._find(params)
        task.polls += 1
        if agent.hiccup and task.polls == 1:
            raise _HttpError(503, "restarting")
        if task.state == "working":
            if agent.behaviour == "fail":
                task.state = "failed"
            elif task.polls >= agent.polls:
                task.state, task.answer = "completed", f"report on {task.text}"
        return _wrap(agent, "task", self._task_json(agent, task), bare=True)

    def _cancel(self, agent: RemoteAgent, params: dict[str, Any]) -> dict[str, Any]:
        task = self._find(params)
        task.state = "canceled"
        self.canceled.append(task.id)
        return _wrap(agent, "task", self._task_json(agent, task), bare=True)

    def _find(self, params: dict[str, Any]) -> _Task:
        task_id = params.get("id")
        if not isinstance(task_id, str):
            raise _RpcError(-32602, "Invalid params: `id` is required")
        task = self.tasks.get(task_id)
        if task is None:
            raise _RpcError(-32001, f"Task not found: {task_id}")
        return task

    def _task_json(self, agent: RemoteAgent, task: _Task) -> dict[str, Any]:
        status: dict[str, Any] = {"state": _state(agent, task.state), "timestamp": "2026-01-01T00:00:00Z"}
        if task.state == "failed":
            status["message"] = _agent_message(agent, task, "the upstream index is offline")
        if task.state == "input-required":
            status["message"] = _agent_message(agent, task, task.question)
        body: dict[str, Any] = {"id": task.id, "contextId": task.context_id, "status": status}
        if task.state == "completed":
            body["artifacts"] = [
                {"artifactId": uuid.uuid4().hex, "name": "answer", "parts": [_text(agent, task.answer)]}
            ]
        return body


_V1_METHODS = {"SendMessage": "_send", "GetTask": "_get", "CancelTask": "_cancel"}
_V03_METHODS = {"message/send": "_send", "tasks/get": "_get", "tasks/cancel": "_cancel"}


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _incoming(agent: RemoteAgent, message: Any) -> tuple[str, str, str | None, str | None]:
    """Check a client message the way the protocol requires; return its text and ids."""
    if not isinstance(message, dict) or not isinstance(message.get("messageId"), str) or not message["messageId"]:
        raise _RpcError(-32602, "Invalid params: message.messageId is required")
    user_role = "ROLE_USER" if agent.version == "1.0" else "user"
    if message.get("role") != user_role:
        raise _RpcError(-32602, f"Invalid params: message.role must be {user_role}")
    if agent.version == "0.3" and message.get("kind") != "message":
        raise _RpcError(-32602, "Invalid params: message.kind must be 'message'")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise _RpcError(-32602, "Invalid params: message.parts must not be empty")
    texts = []
    for part in parts:
        if agent.version == "0.3" and part.get("kind") != "text":
            raise _RpcError(-32602, "Invalid params: part.kind must be 'text'")
        if not isinstance(part.get("text"), str):
            raise _RpcError(-32005, "Content type not supported: send text parts")
        texts.append(part["text"])
    return "\n".join(texts), message["messageId"], message.get("contextId"), message.get("taskId")


def _state(agent: RemoteAgent, state: str) -> str:
    return f"TASK_STATE_{state.upper().replace('-', '_')}" if agent.version == "1.0" else state


def _text(agent: RemoteAgent, text: str) -> dict[str, Any]:
    return {"text": text} if agent.version == "1.0" else {"kind": "text", "text": text}


def _agent_message(agent: RemoteAgent, task: _Task, text: str) -> dict[str, Any]:
    message = {
        "messageId": uuid.uuid4().hex,
        "contextId": task.context_id,
        "taskId": task.id,
        "parts": [_text(agent, text)],
    }
    if agent.version == "1.0":
        return {**message, "role": "ROLE_AGENT"}
    return {**message, "role": "agent", "kind": "message"}


def _wrap(agent: RemoteAgent, kind: str, body: dict[str, Any], *, bare: bool = False) -> dict[str, Any]:
    """1.0 wraps a SendMessage result as `{"task": ...}` / `{"message": ...}`; 0.3 tags it with `kind`."""
    if agent.version == "0.3":
        return {**body, "kind": kind}
    if kind == "message":
        body = {**body, "role": "ROLE_AGENT"}
    return body if bare else {kind: body}


def _error(rpc_id: Any, code: int, message: str) -> JSONResponse:
    return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}})
