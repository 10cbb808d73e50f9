"""Tracing is on when an OTLP endpoint is set or a tracer provider is given, and costs nothing otherwise:
no OpenTelemetry SDK loaded, no interceptor, `import stalwart` and `stalwart --help` untouched. A client that
traces carries the caller's current span into the run, so the run's spans join the caller's trace."""

from __future__ import annotations

import os
import uuid

import pytest
from span_trees import spans_of_trace

from stalwart.client.connection import connect
from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers.worker import build_worker

from support.fresh_python import printed_by
from support.head_start import head_start

PROBE = """
import sys
{before}
from stalwart.workers.plugin import StalwartPlugin
plugin = StalwartPlugin()
from opentelemetry import trace
print(plugin.tracing, type(trace.get_tracer_provider()).__name__,
      sorted({{m.split(".")[1] for m in sys.modules if m.startswith("opentelemetry.") and m.count(".")}} & {{"sdk"}}),
      "temporalio.contrib.opentelemetry" in sys.modules)
"""


def _python(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return printed_by(code, {**clean, **env})


# Each probe is two seconds of a core importing: they run from the start of the session (support/head_start.py).
NO_ENDPOINT = head_start(lambda: _python(PROBE.format(before="")))
ENDPOINT = head_start(lambda: _python(PROBE.format(before=""), OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318"))
DISABLED = head_start(
    lambda: _python(
        PROBE.format(before=""), OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", OTEL_SDK_DISABLED="true"
    )
)


@pytest.mark.head_start(NO_ENDPOINT)
def test_without_an_endpoint_a_worker_loads_no_opentelemetry_sdk(head_start_result: str):
    assert head_start_result == "False ProxyTracerProvider [] False"


@pytest.mark.head_start(ENDPOINT)
def test_an_otlp_endpoint_turns_tracing_on(head_start_result: str):
    assert head_start_result == "True ReplaySafeTracerProvider ['sdk'] True"


@pytest.mark.head_start(DISABLED)
def test_otel_sdk_disabled_wins_over_an_endpoint(head_start_result: str):
    assert head_start_result == "False ProxyTracerProvider [] False"


def test_import_and_help_load_no_opentelemetry():
    code = (
        "import sys, contextlib, io\n"
        "import stalwart\n"
        "from stalwart.client import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli.main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    assert _python(code, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318") == "[]"


async def test_a_traced_client_puts_the_run_under_the_callers_span(dev_env, traced):
    from opentelemetry import trace
    from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor

    client = await connect(dev_env.address, from_config=False)  # traces, as the process does
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    agent = AgentSpec(name="greeter", scripted=[ScriptedReply(text="Hello.")])
    worker = build_worker(client, task_queue=task_queue)
    interceptors = [*client.config()["interceptors"], *worker.config(active_config=True)["interceptors"]]
    assert sum(isinstance(i, OpenTelemetryInterceptor) for i in interceptors) == 1, "each span would be made twice"
    async with worker:
        with trace.get_tracer("the-callers-app").start_as_current_span("handle request") as caller:
            await client.execute_workflow(
                WORKFLOW_TYPE,
                RunInput(agent=agent, goal="Say hello"),
                id=f"traced-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
                result_type=AgentResult,
            )
    spans = spans_of_trace(traced.get_finished_spans(), root_name="handle request")
    run = next(s for s in spans if s.name == "invoke_agent greeter")
    assert run.parent is not None and run.parent.span_id == caller.get_span_context().span_id
    assert [s.name for s in spans if s.parent and s.parent.span_id == run.context.span_id] == ["chat scripted"]


async def test_a_client_with_the_sdks_opentelemetry_plugin_gets_stalwarts_spans(dev_env, traced):
    """A Temporal user who already set up `OpenTelemetryPlugin` (and its replay-safe provider) needs nothing more."""
    from temporalio.client import Client
    from temporalio.contrib.opentelemetry import OpenTelemetryPlugin

    from stalwart.activities.storage.converter import stalwart_converter
    from stalwart.workers import telemetry

    telemetry.disable_tracing()  # no endpoint, no provider given to Stalwart: only the user's setup
    client = await Client.connect(dev_env.address, plugins=[OpenTelemetryPlugin()], data_converter=stalwart_converter())
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    agent = AgentSpec(
        name="adopted",
        tools=["echo"],
        scripted=[{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "Hi."}],
    )
    run_id = f"adopted-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue=task_queue):
        await client.execute_workflow(
            WORKFLOW_TYPE, RunInput(agent=agent, goal="Hi"), id=run_id, task_queue=task_queue, result_type=AgentResult
        )
    spans = spans_of_trace(traced.get_finished_spans(), root_name="invoke_agent adopted", run_id=run_id)
    assert sorted(s.name for s in spans) == [
        "chat scripted",
        "chat scripted",
        "execute_tool echo",
        "invoke_agent adopted",
    ]


def test_an_otlp_endpoint_that_is_not_a_url_is_one_error_line_not_spans_dropped_in_silence():
    """`localhost:4318` (a gRPC habit) or a typo made every export fail, one cryptic log line per batch, while the
    worker ran on without traces; it is refused at start, naming the variable and the form it takes."""
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for variable, value in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not a url"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:http"),
    ]:
        env = {**clean, "TEMPORAL_ADDRESS": "localhost:1", "HOME": "/nonexistent", variable: value}
        done = subprocess.run(
            [sys.executable, "-m", "stalwart.client.cli", "worker"], env=env, capture_output=True, text=True
        )
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert f"{variable}={value!r} is not a URL" in done.stderr, done.stderr
        assert "http://HOST:4318" in done.stderr, done.stderr


def test_grpc_without_its_exporter_installed_is_one_error_line_naming_the_package():
    """docs/production.md says OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs another package; without it, a RuntimeError
    traceback."""
    import subprocess
    import sys

    from support.fresh_python import printed_by

    installed = printed_by("import importlib.util as u; print(u.find_spec('opentelemetry.exporter.otlp.proto.grpc'))")
    if installed != "None":
        return  # the exporter is installed here: nothing to refuse
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env = {
        **clean,
        "TEMPORAL_ADDRESS": "localhost:1",
        "HOME": "/nonexistent",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317",
    }
    done = subprocess.run(
        [sys.executable, "-m", "stalwart.client.cli", "runs"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "pip install opentelemetry-exporter-otlp-proto-grpc" in done.stderr, done.stderr
