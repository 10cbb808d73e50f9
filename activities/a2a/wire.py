"""The A2A JSON-RPC wire formats Stalwart speaks: 1.0 (current) and 0.3 (still the most deployed).

The two differ in method names (`SendMessage` / `message/send`), enum
spellings (`TASK_STATE_COMPLETED` / `completed`, `ROLE_USER` / `user`) and
how a result says what it is (`{"task": ...}` / `"kind": "task"`). Each
`Dialect` builds requests and reads replies into one shape, `Reply`, so the
delegation loop does not care which version the agent speaks.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from stalwart.activities.a2a.errors import A2AProtocolError

TaskState = Literal[
    "submitted", "working", "input-required", "completed", "canceled", "failed", "rejected", "auth-required"
]
END_STATES: frozenset[str] = frozenset(
    {"input-required", "completed", "canceled", "failed", "rejected", "auth-required"}
)
"""States after which polling stops: the task is over, or it waits for us."""
_KNOWN_STATES = {"submitted", "working", *END_STATES}


@dataclass(frozen=True)
class Reply:
    """The remote agent's answer so far. A Message reply is a finished, `completed` reply without a task."""

    state: TaskState
    text: str
    task_id: str | None = None
    context_id: str | None = None

    @property
    def finished(self) -> bool:
        return self.state in END_STATES


PartText = Callable[[dict[str, Any]], str]


class Dialect(ABC):
    """One protocol version's JSON-RPC methods and shapes."""

    send_method: str
    get_method: str
    cancel_method: str
    headers: Mapping[str, str] = {}

    @abstractmethod
    def send_params(self, text: str, message_id: str, context_id: str | None, task_id: str | None) -> dict[str, Any]:
        """The params of the send method: one user message with one text part."""

    @abstractmethod
    def send_result(self, result: Any) -> Reply:
        """Read the send method's result, a Task or a Message."""

    @abstractmethod
    def task(self, result: Any) -> Reply:
        """Read a Task."""

    def task_params(self, task_id: str) -> dict[str, Any]:
        return {"id": task_id}


class V1(Dialect):
    """A2A 1.0: protobuf-JSON shapes, PascalCase methods, the `A2A-Version` header."""

    send_method = "SendMessage"
    get_method = "GetTask"
    cancel_method = "CancelTask"
    headers = {"A2A-Version": "1.0"}

    def send_params(self, text: str, message_id: str, context_id: str | None, task_id: str | None) -> dict[str, Any]:
        message: dict[str, Any] = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
        _put_ids(message, context_id, task_id)
        return {"message": message, "configuration": {"returnImmediately": True}}

    def send_result(self, result: Any) -> Reply:
        body = _object(result, "SendMessage result")
        if isinstance(body.get("task"), dict):
            return self.task(body["task"])
        if isinstance(body.get("message"), dict):
            return _message_reply(body["message"], _v1_part_text)
        raise A2AProtocolError(f"SendMessage result has neither `task` nor `message` (keys: {sorted(body)})")

    def task(self, result: Any) -> Reply:
        return _task_reply(result, _v1_part_text)


class V03(Dialect):
    """A2A 0.3: `kind`-tagged objects, slash-separated methods, lower-case enums."""

    send_method = "message/send"
    get_method = "tasks/get"
    cancel_method = "tasks/cancel"

    def send_params(self, text: str, message_id: str, context_id: str | None, task_id: str | None) -> dict[str, Any]:
        message: dict[str, Any] = {
            "kind": "message",
            "messageId": message_id,
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        _put_ids(message, context_id, task_id)
        return {"message": message, "configuration": {"blocking": False}}

    def send_result(self, result: Any) -> Reply:
        body = _object(result, "message/send result")
        kind = body.get("kind")
        if kind == "task":
            return self.task(body)
        if kind == "message":
            return _message_reply(body, _v03_part_text)
        raise A2AProtocolError(f"message/send result has kind {kind!r}; expected `task` or `message`")

    def task(self, result: Any) -> Reply:
        return _task_reply(result, _v03_part_text)


def dialect_for(protocol_version: str) -> Dialect:
    """The dialect of a card's protocol version: 1.x speaks 1.0, 0.x speaks 0.3."""
    major = protocol_version.strip().split(".")[0]
    if major == "1":
        return V1()
    if major == "0":
        return V03()
    raise A2AProtocolError(
        f"the agent speaks A2A {protocol_version!r}; Stalwart speaks 1.0 and 0.3. "
        f"Offer a 1.0 or 0.3 JSON-RPC interface on the agent's card."
    )


def _put_ids(message: dict[str, Any], context_id: str | None, task_id: str | None) -> None:
    if context_id:
        message["contextId"] = context_id
    if task_id:
        message["taskId"] = task_id


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise A2AProtocolError(f"{what} is {type(value).__name__}, not an object")
    return value


def _state(wire_state: str) -> str:
    """`TASK_STATE_INPUT_REQUIRED` (1.0) and `input-required` (0.3) are the same state."""
    return wire_state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _task_reply(result: Any, part_text: PartText) -> Reply:
    task = _object(result, "task")
    status = task.get("status")
    if not isinstance(task.get("id"), str) or not isinstance(status, dict) or not isinstance(status.get("state"), str):
        raise A2AProtocolError(f"task lacks `id` or `status.state` (got keys {sorted(task)})")
    state = _state(status["state"])
    if state not in _KNOWN_STATES:
        raise A2AProtocolError(f"task {task['id']} is in unknown state {status['state']!r}")
    state = cast(TaskState, state)
    artifacts = "\n".join(
        _parts_text(artifact.get("parts"), part_text)
        for artifact in task.get("artifacts") or []
        if isinstance(artifact, dict)
    ).strip()
    said = _parts_text((status.get("message") or {}).get("parts"), part_text)
    # The answer of a finished task is its artifacts; a question, refusal or failure is in the status message.
    text = (artifacts or said) if state == "completed" else (said or artifacts)
    return Reply(state=state, text=text, task_id=task["id"], context_id=task.get("contextId"))


def _message_reply(message: dict[str, Any], part_text: PartText) -> Reply:
    return Reply(
        state="completed",
        text=_parts_text(message.get("parts"), part_text),
        task_id=message.get("taskId"),
        context_id=message.get("contextId"),
    )


def _parts_text(parts: Any, part_text: PartText) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(t for t in (part_text(p) for p in parts if isinstance(p, dict)) if t).strip()


def _v1_part_text(part: dict[str, Any]) -> str:
    if "text" in part:
        return str(part["text"])
    if "data" in part:
        return json.dumps(part["data"], ensure_ascii=False)
    if "url" in part or "raw" in part:
        return _file_note(part.get("filename"), part.get("url"), part.get("mediaType"))
    return ""


def _v03_part_text(part: dict[str, Any]) -> str:
    kind = part.get("kind")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "data":
        return json.dumps(part.get("data"), ensure_ascii=False)
    if kind == "file":
        file = part.get("file") or {}
        return _file_note(file.get("name"), file.get("uri"), file.get("mimeType"))
    return ""


def _file_note(name: str | None, url: str | None, media_type: str | None) -> str:
    """A file part as a line the model can read: where to fetch it, or that inline bytes were left out."""
    label = f"file {name}" if name else "file"
    if url:
        return f"[{label} at {url}]"
    return f"[{label} ({media_type or 'bytes'}) sent inline, not shown]"
