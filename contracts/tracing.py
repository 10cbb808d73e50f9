"""Whether a process traces, read from the standard OpenTelemetry variables without importing OpenTelemetry.

Shared by the worker (`workers/telemetry.py`) and the client (`client/connection.py`), which must
decide without loading the worker SDK: most CLI commands neither trace nor serve metrics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for OTLP export (an endpoint is set and the SDK is not disabled)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)
