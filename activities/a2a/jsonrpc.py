"""JSON-RPC 2.0 calls to an agent's endpoint, with A2A's error codes named in the message."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from stalwart.activities.a2a import transport
from stalwart.activities.a2a.errors import A2AProtocolError

TASK_NOT_FOUND = -32001
ERROR_NAMES = {
    -32700: "JSON parse error",
    -32600: "invalid request",
    -32601: "method not found",
    -32602: "invalid params",
    -32603: "internal error",
    TASK_NOT_FOUND: "task not found",
    -32002: "task not cancelable",
    -32003: "push notifications not supported",
    -32004: "unsupported operation",
    -32005: "content type not supported",
    -32006: "invalid agent response",
    -32007: "extended agent card not configured",
    -32008: "extension support required",
    -32009: "protocol version not supported",
}


class Endpoint:
    """An agent's JSON-RPC URL with the headers every call carries (protocol version, bearer token)."""

    def __init__(
        self, http: httpx.AsyncClient, url: str, headers: dict[str, str], *, token_env: str | None = None
    ) -> None:
        self.http = http
        self.url = url
        self.headers = headers
        self.token_env = token_env

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """The `result` of one call; an HTTP failure or a JSON-RPC `error` raises with its cause named."""
        what = f"A2A {method}"
        payload = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        response = await transport.send(self.http, "POST", self.url, what, json=payload, headers=self.headers)
        transport.check_status(response, what, token_env=self.token_env)
        body = transport.json_body(response, what)
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or ("result" not in body and "error" not in body):
            raise A2AProtocolError(
                f"{what}: {self.url} did not answer a JSON-RPC 2.0 response; is it an A2A JSON-RPC endpoint?"
            )
        error = body.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            raise A2AProtocolError(
                f"{what}: the agent answered {_describe(error)}", rpc_code=code if isinstance(code, int) else None
            )
        return body["result"]


def _describe(error: Any) -> str:
    if not isinstance(error, dict):
        return f"a malformed JSON-RPC error {error!r}"
    code = error.get("code")
    name = ERROR_NAMES.get(code, "error") if isinstance(code, int) else "error"
    text = f"JSON-RPC {name} ({code}): {error.get('message') or 'no message'}"
    if error.get("data"):
        text += f" [{str(error['data'])[:200]}]"
    return text
