"""A tracer provider for the trace tests: replay-safe, into an in-memory exporter, for this directory only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def traced() -> Iterator[object]:
    """Workers built during the test trace into the returned in-memory exporter (spans of this test only)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider, create_tracer_provider

    from stalwart.workers import telemetry

    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):  # OpenTelemetry allows one per process
        provider = create_tracer_provider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable_tracing(provider)
    try:
        yield exporter
    finally:
        telemetry.disable_tracing()
        exporter.shutdown()  # later spans are no longer kept
