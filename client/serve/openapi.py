"""The OpenAPI document of `/api`, made from the route table: a route added there is described here with no
second list to keep in step."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

_PARAMETER = re.compile(r"{(\w+)}")
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}


@dataclass(frozen=True)
class Endpoint:
    """One route: its path and method, what serves it, and what it takes and answers (for the document)."""

    path: str
    method: str
    handler: Any
    body: type[BaseModel] | None = None
    query: Sequence[tuple[str, str, str]] = ()
    """(name, JSON type, description) of each query parameter."""
    answers: dict[int, str] = field(default_factory=dict)
    """The statuses it answers besides errors, with what each means."""
    media_type: str = "application/json"


def document(endpoints: Sequence[Endpoint], *, version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        doc = (endpoint.handler.__doc__ or "").strip()
        summary, _, description = doc.partition("\n")
        operation: dict[str, Any] = {
            "operationId": endpoint.handler.__name__.strip("_"),
            "summary": summary.strip(),
            "parameters": [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in _PARAMETER.findall(endpoint.path)
            ]
            + [
                {"name": name, "in": "query", "required": False, "schema": {"type": kind}, "description": text}
                for name, kind, text in endpoint.query
            ],
            "responses": {
                str(status): {"description": text, "content": {endpoint.media_type: {}}}
                for status, text in (endpoint.answers or {200: "done"}).items()
            }
            | {"default": {"description": "a refusal, with its reason", "content": _json(_ERROR_REF)}},
        }
        if description.strip():
            operation["description"] = " ".join(description.split())
        if endpoint.body is not None:
            operation["requestBody"] = {"required": True, "content": _json(endpoint.body.model_json_schema())}
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Stalwart",
            "version": version,
            "description": "Start, follow and answer durable agent runs and sessions (docs/serve.md).",
        },
        "paths": paths,
        "components": {
            "schemas": {"Error": ERROR_SCHEMA},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}
