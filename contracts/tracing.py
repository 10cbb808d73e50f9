"""Whether a process traces, read from the standard OpenTelemetry variables without importing OpenTelemetry.

Shared by the worker (`workers/telemetry.py`) and the client (`client/connection.py`), which must
decide without loading the worker SDK: most CLI commands neither trace nor serve metrics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from stalwart.contracts.errors import ConfigurationError

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for OTLP export (an endpoint is set and the SDK is not disabled)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


class TracingSettingError(ConfigurationError):
    """An `OTEL_EXPORTER_OTLP_*` setting the exporter cannot use; the message names the variable and the fix."""


def check_otlp_endpoint(environ: Mapping[str, str] | None = None) -> None:
    """Refuse the OTLP/HTTP endpoint traces would go to when it is not an http(s) URL.

    The OpenTelemetry exporter takes any string and fails each export later with one log line per batch
    ("No connection adapters were found"), so a worker ran without traces and nobody was told at the start.
    The gRPC exporter (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`) takes a bare HOST:PORT, so it is not checked.
    """
    env = os.environ if environ is None else environ
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    if protocol.strip().lower() == "grpc":
        return
    variable = next((name for name in reversed(ENDPOINT_VARIABLES) if env.get(name, "").strip()), None)
    if variable is None:
        return
    value = env[variable].strip()
    try:
        parts = urlsplit(value)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number
        usable = False
    if not usable:
        raise TracingSettingError(
            f"{variable}={value!r} is not a URL: give the collector's OTLP/HTTP address, e.g. http://HOST:4318 "
            "(or set OTEL_EXPORTER_OTLP_PROTOCOL=grpc for a gRPC collector on HOST:4317)"
        )
