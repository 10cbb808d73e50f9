"""A tiny OTLP/HTTP trace collector for tests: it keeps every span a process exports to `/v1/traces`."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class Ref:
    span_id: int
    trace_id: int


@dataclass
class ReceivedSpan:
    """The fields of an exported span the tests read, shaped like the SDK's ReadableSpan (`span_trees`)."""

    name: str
    context: Ref
    parent: Ref | None
    start_time: int
    end_time: int
    attributes: dict[str, Any] = field(default_factory=dict)
    service: str = ""


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


class Collector:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                collector._receive(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def _receive(self, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    trace_id = int.from_bytes(span.trace_id, "big")
                    parent = int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else None
                    spans.append(
                        ReceivedSpan(
                            name=span.name,
                            context=Ref(int.from_bytes(span.span_id, "big"), trace_id),
                            parent=Ref(parent, trace_id) if parent else None,
                            start_time=span.start_time_unix_nano,
                            end_time=span.end_time_unix_nano,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            service=str(resource.get("service.name", "")),
                        )
                    )
        with self._lock:
            self.spans.extend(spans)
