"""Traces and metrics of a worker (and of a client's run starts): OpenTelemetry and Prometheus.

Traces: on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, or a tracer
provider is given. They go through `temporalio.contrib.opentelemetry`: its interceptor carries the trace context
from the client's start into the workflow, from the workflow into its activities and child workflows, and its
replay-safe tracer provider gives a workflow's spans the same ids on every replay and exports them only from
live (not replayed) code, so an evicted or crashed-and-resumed run shows each span once. Spans go over OTLP/HTTP
(`OTEL_EXPORTER_OTLP_*` variables as the OpenTelemetry SDK reads them; `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` if
`opentelemetry-exporter-otlp-proto-grpc` is installed). Off, nothing here imports OpenTelemetry.

Metrics: the SDK runtime serves Prometheus (`metrics_runtime`): Temporal's own worker metrics plus Stalwart's
(`stalwart_*`, recorded through the SDK's activity and workflow metric meters, which skip replays), and
`stalwart_approvals_waiting`, sampled from the server's visibility by `approvals_gauge`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.worker import Interceptor, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

from stalwart.activities import telemetry as activity_telemetry
from stalwart.contracts.errors import InfrastructureError, UsageError
from stalwart.contracts.names import AGENT_AWAITING_APPROVAL
from stalwart.contracts.tracing import TracingSettingError, check_otlp_endpoint, tracing_wanted
from stalwart.workflows.telemetry import SPAN_FUNCTION

logger = logging.getLogger(__name__)

TRACER_NAME = "stalwart"
SERVICE_NAME = "stalwart"
METRICS_PORT_VARIABLE = "STALWART_METRICS_PORT"
APPROVALS_SAMPLE_SECONDS = 15.0


class TelemetrySettingError(UsageError, ValueError):
    """A tracer provider Stalwart cannot use, or a metrics port or address that is none (--metrics-port)."""


class MetricsUnavailable(InfrastructureError, RuntimeError):
    """Metrics cannot be served on the address given: another process holds the port, most often."""


LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
COST_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)
HISTOGRAM_BUCKETS: dict[str, tuple[float, ...]] = {
    "stalwart_model_latency_seconds": LATENCY_BUCKETS,
    "stalwart_tool_latency_seconds": LATENCY_BUCKETS,
    "stalwart_model_cost_usd": COST_BUCKETS,
}


# -- traces -------------------------------------------------------------------


_interceptor: Any = None


def enable_tracing(tracer_provider: Any = None) -> bool:
    """Make sure the process traces: install `tracer_provider`, or one exporting over OTLP when the environment
    names an endpoint. Returns whether tracing is on. Safe to call more than once."""
    global _interceptor
    if _interceptor is not None:
        if tracer_provider is not None:
            _install(tracer_provider)  # refuses a second, different provider
        return True
    if tracer_provider is None and not tracing_wanted():
        return False
    if tracer_provider is None:
        check_otlp_endpoint()  # before anything is installed: a bad endpoint is said at start, not per batch
    from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor

    _install(tracer_provider if tracer_provider is not None else _otlp_provider())
    _interceptor = OpenTelemetryInterceptor()
    activity_telemetry.enable_tracing()
    return True


def disable_tracing() -> None:
    """Stop adding tracing to new clients and workers (tests); the global tracer provider stays, as OpenTelemetry
    allows one per process."""
    global _interceptor
    _interceptor = None
    activity_telemetry.disable_tracing()


def tracing_interceptors() -> list[Any]:
    """The interceptors a traced client or worker needs (none when tracing is off)."""
    if _interceptor is None:
        return []
    return [_interceptor]


def has_tracing_interceptor(interceptors: Any) -> bool:
    """Whether a client already carries the SDK's OpenTelemetry interceptor (ours or a user's plugin's)."""
    if _interceptor is None and not interceptors:
        return False
    from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor

    return any(isinstance(i, OpenTelemetryInterceptor) for i in interceptors or ())


def adopt_tracing(client_interceptors: Any) -> bool:
    """Trace Stalwart's spans too when a client already traces through the SDK's OpenTelemetry interceptor and
    the process's tracer provider is replay-safe (a user's own `OpenTelemetryPlugin` setup)."""
    names = {cls.__name__ for i in client_interceptors or () for cls in type(i).__mro__}
    if "OpenTelemetryInterceptor" not in names:
        return False  # checked by name first: no OpenTelemetry import for clients that do not trace
    from opentelemetry import trace
    from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor, ReplaySafeTracerProvider

    if not any(isinstance(i, OpenTelemetryInterceptor) for i in client_interceptors):
        return False
    if not isinstance(trace.get_tracer_provider(), ReplaySafeTracerProvider):
        return False
    activity_telemetry.enable_tracing()
    return True


def _install(provider: Any) -> None:
    from opentelemetry import trace
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider

    if not isinstance(provider, ReplaySafeTracerProvider):
        raise TelemetrySettingError(
            f"the tracer provider given is a {type(provider).__name__}, which is not replay-safe: make it with "
            "temporalio.contrib.opentelemetry.create_tracer_provider() and add your span processors to it, so a "
            "workflow's spans keep their ids on replay and are exported once"
        )
    current = trace.get_tracer_provider()
    if current is provider:
        return
    if isinstance(current, ReplaySafeTracerProvider) or not isinstance(current, trace.ProxyTracerProvider):
        raise TelemetrySettingError(
            f"this process already has a global tracer provider ({type(current).__name__}); OpenTelemetry allows "
            "one per process: give Stalwart that one (it must come from "
            "temporalio.contrib.opentelemetry.create_tracer_provider())"
        )
    trace.set_tracer_provider(provider)


def _otlp_provider() -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from temporalio.contrib.opentelemetry import create_tracer_provider

    resource = Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, as the SDK reads them
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = create_tracer_provider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
    return provider


def _otlp_exporter() -> Any:
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    )
    if protocol.strip().lower() == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
        except ImportError as err:
            raise TracingSettingError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs `pip install opentelemetry-exporter-otlp-proto-grpc`; "
                "or send over HTTP (the default: unset it and point OTEL_EXPORTER_OTLP_ENDPOINT at port 4318)"
            ) from err
        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


class _WorkflowSpan:
    """A span current for a block of workflow code; its handle lets the workflow add attributes or an error."""

    def __init__(self, name: str, attributes: dict[str, Any], ends_on: tuple[type[BaseException], ...]) -> None:
        self._name = name
        self._attributes = attributes
        self._ends_on = ends_on
        self._span: Any = None
        self._token: Any = None

    def __enter__(self) -> _WorkflowSpan:
        from opentelemetry import context, trace

        self._span = trace.get_tracer(TRACER_NAME).start_span(self._name, attributes=self._attributes)
        self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self._span.set_attributes(dict(attributes))

    def error(self, kind: str, message: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", kind)
        self._span.set_status(Status(StatusCode.ERROR, message[:500]))

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        from opentelemetry import context

        with contextlib.suppress(ValueError):  # a token of another context (a workflow torn down elsewhere)
            context.detach(self._token)
        if error is not None and isinstance(error, self._ends_on):
            self._span.set_attribute("stalwart.ended_by", type(error).__name__.lstrip("_"))
        if error is None or isinstance(error, (asyncio.CancelledError, *self._ends_on)):
            self._span.end()  # the replay-safe span ends (exports) only outside replay and eviction
        elif isinstance(error, workflow.ContinueAsNewError):
            self._span.set_attribute("stalwart.continued_as_new", True)
            self._span.end()
        elif workflow.is_failure_exception(error):
            self.error(type(error).__name__, str(error))
            self._span.end()
        # else: the workflow task fails and is retried, which starts this span again with the same ids


class TelemetryInterceptor(Interceptor):
    """Lends workflow code its span factory (`stalwart.workflows.telemetry.span`) when the worker traces."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        input.unsafe_extern_functions[SPAN_FUNCTION] = _WorkflowSpan
        return None


# -- metrics ------------------------------------------------------------------

_runtimes: dict[str, Runtime] = {}


def metrics_address(port: int | str) -> str:
    """`9464` serves on every interface (as Prometheus exporters do, so a scraper in another container reaches
    it); `127.0.0.1:9464` (or `localhost:9464`, `[::1]:9464`) on one.

    Checked here because the SDK's exporter says only "invalid socket address syntax" for a port out of range
    or a host name, and would serve port 0 on a port nobody is told of.
    """
    text = str(port).strip()
    usage = (
        f"metrics port {text!r} is neither a port (9464) nor HOST:PORT (127.0.0.1:9464): "
        "fix --metrics-port or STALWART_METRICS_PORT"
    )
    host, colon, number = text.rpartition(":")
    if not number.isdigit() or (colon and not host):
        raise TelemetrySettingError(usage)
    if not 1 <= int(number) <= 65535:
        raise TelemetrySettingError(
            f"metrics port {int(number)} is not a port number: give one from 1 to 65535 "
            "(--metrics-port or STALWART_METRICS_PORT)"
        )
    if not colon:
        return f"0.0.0.0:{int(number)}"
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
    except ValueError:
        raise TelemetrySettingError(
            f"metrics host {host!r} is not an IP address: bind one interface by its address (127.0.0.1:{number}, "
            f"[::1]:{number}), or give the port alone to serve on every interface"
        ) from None
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{int(number)}"


def metrics_runtime(port: int | str) -> Runtime:
    """A Temporal runtime serving Prometheus metrics at `http://HOST:PORT/metrics`, one per address per process.

    A client connected with it (`Client.connect(runtime=...)`) gives its workers the same runtime: Temporal's
    worker metrics and Stalwart's `stalwart_*` metrics are served there.
    """
    address = metrics_address(port)
    if address not in _runtimes:
        try:
            _runtimes[address] = Runtime(
                telemetry=TelemetryConfig(
                    metrics=PrometheusConfig(
                        bind_address=address,
                        histogram_bucket_overrides={k: list(v) for k, v in HISTOGRAM_BUCKETS.items()},
                    )
                )
            )
        except Exception as err:
            raise MetricsUnavailable(
                f"cannot serve metrics on {address}: {err}. Is another process using the port? Pick another "
                "with --metrics-port."
            ) from err
    return _runtimes[address]


def runtime_serves(runtime: Runtime | None, port: int | str) -> bool:
    return runtime is not None and _runtimes.get(metrics_address(port)) is runtime


async def sample_approvals_waiting(client: Client, set_gauge: Callable[[int], None]) -> int:
    """Count the namespace's running runs that wait for a person's approval (from the server's visibility)."""
    query = f"{AGENT_AWAITING_APPROVAL.name} = true AND ExecutionStatus = 'Running'"
    count = (await client.count_workflows(query)).count
    set_gauge(count)
    return count


@asynccontextmanager
async def approvals_gauge(client: Client, every: float | None = None) -> AsyncIterator[None]:
    """While the block runs, keep `stalwart_approvals_waiting` at the number of runs awaiting approval.

    A gauge of the namespace read from visibility, not counted by workflow code: a run waiting for approval
    may sit in no worker's cache, and replays must not move it.
    """
    meter = client.service_client.config.runtime.metric_meter if client.service_client.config.runtime else None
    if meter is None:
        meter = Runtime.default().metric_meter
    gauge = meter.create_gauge(
        "stalwart_approvals_waiting", "Running agent runs waiting for a person to approve a tool call (namespace)"
    )
    attributes = {"namespace": client.namespace}

    async def sample_forever() -> None:
        while True:
            try:
                await sample_approvals_waiting(client, lambda n: gauge.set(n, attributes))
            except Exception as err:  # visibility down for a moment: keep the last value, try again
                logger.debug("cannot count runs awaiting approval: %s", err)
            await asyncio.sleep(APPROVALS_SAMPLE_SECONDS if every is None else every)

    task = asyncio.create_task(sample_forever())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def flush() -> None:
    """Export the spans still buffered (a worker stopping); a crash loses at most the batch delay's worth."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if hasattr(provider, "force_flush"):
        provider.force_flush(10_000)
