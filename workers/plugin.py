"""`StalwartPlugin`: Stalwart inside any Temporal client and worker, including a user's own.

The plugin carries everything a worker needs to run agents: the agent
workflow, the model, tool and A2A activities, the data converter that carries
Stalwart's pydantic contracts as plain JSON, and the lifespan of what a worker
keeps open across activities (MCP connections, provider SDK clients). Our own
`stalwart worker` and `build_worker` go through it too, so there is one way in.

    client = await Client.connect("localhost:7233", plugins=[StalwartPlugin(tools=[mytools])])
    worker = Worker(client, task_queue="stalwart")  # runs AgentWorkflow and its activities
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

from temporalio.client import Client
from temporalio.plugin import SimplePlugin
from temporalio.service import ConnectConfig, ServiceClient
from temporalio.worker import Worker, WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from stalwart.activities import redacting, secrets, sent_messages
from stalwart.activities.a2a.activities import a2a_delegate, a2a_describe
from stalwart.activities.agent_runs import agent_result, agent_send
from stalwart.activities.model_activity import ModelActivities
from stalwart.activities.retried_calls import retried_calls
from stalwart.activities.storage.config import StorageConfig
from stalwart.activities.storage.converter import stalwart_converter
from stalwart.activities.stream_broker import StreamBroker, StreamBrokerInterceptor
from stalwart.activities.stream_broker import enabled as stream_broker_enabled
from stalwart.activities.streaming import HEARTBEAT_THROTTLE
from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools import builtin
from stalwart.activities.tools.registry import ToolRegistry
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.errors import UsageError
from stalwart.contracts.stream import IDENTITY_MARK
from stalwart.workers import telemetry
from stalwart.workflows import AgentWorkflow

PLUGIN_NAME = "stalwart.StalwartPlugin"
SHARED_MODULES = ("stalwart.contracts", "stalwart.workflows", "stalwart.workflow")
"""Deterministic modules every workflow run shares (see `_share_deterministic_modules`)."""


class PluginError(UsageError, ValueError):
    """`StalwartPlugin` used in a way that cannot work (applied twice, metrics without their runtime)."""


class StalwartPlugin(SimplePlugin):
    """Adds Stalwart's workflow, activities and data converter to a Temporal client or worker.

    Pass it to `Client.connect(plugins=[...])` (every worker of that client then runs
    agents) or to one `Worker(plugins=[...])`; not to both. An existing data converter
    keeps its codec and failure converter: only the payload converter becomes Stalwart's.

    Args:
        tools: Modules or functions decorated with `@tool`, registered beside the built-in tools.
        agents: Agents (`AgentSpec`) whose tools were given as `@tool` functions, and their sub-agents': those
            functions are registered, so the worker runs every tool these agents name.
        registry: A complete tool registry instead (then `tools` is added to it).
        models: The model activity with its SDK clients; tests pass one to share its clients.
        storage: Where payloads over the size threshold and conversations are kept; by default
            from `STALWART_STORAGE` (unless set, the user's `~/.local/share/stalwart/storage`).
        allowed_env: Further environment variables (names, or patterns like `MYCO_*`) that agent files may
            name in `api_key_env`, `auth_token_env` and `${NAME}`, besides `STALWART_AGENT_*` and
            `STALWART_ALLOWED_ENV`'s list. Never the worker's own settings (`activities/worker_settings.py`)
            nor a provider key, which goes only to its provider's models (docs/secrets.md). Their values are
            redacted from everything an activity returns, raises, heartbeats or logs (`activities/secrets.py`).
        tracer_provider: Trace into this OpenTelemetry tracer provider (made with
            `temporalio.contrib.opentelemetry.create_tracer_provider()`, installed as the process's global one).
            Without it, traces go over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and are off otherwise.
        metrics_port: Serve Prometheus metrics on this port (or `HOST:PORT`) through the SDK runtime. Given to
            `Client.connect(plugins=[...])`, the plugin makes the runtime; a client connected without it cannot
            serve them (connect with `stalwart.client.connection.connect(metrics_port=...)` then).
    """

    def __init__(
        self,
        *,
        tools: Iterable[ModuleType | Any] = (),
        agents: Iterable[AgentSpec] = (),
        registry: ToolRegistry | None = None,
        models: ModelActivities | None = None,
        storage: StorageConfig | None = None,
        allowed_env: Iterable[str] = (),
        tracer_provider: Any = None,
        metrics_port: int | str | None = None,
    ) -> None:
        self.tracing = telemetry.enable_tracing(tracer_provider)
        self.metrics_port = metrics_port
        self.storage = storage
        self.allowed_env = list(allowed_env)
        redacting.install_log_redaction()
        self.registry = registry or default_tool_registry()
        for extra in tools:
            if isinstance(extra, ModuleType):
                self.registry.register_module(extra)
            else:
                self.registry.register(extra)
        for agent in agents:
            for function in agent.tool_functions():
                self.registry.register(function)
        self.model_activities = models or ModelActivities()
        # One transcript store per worker: the model call reads a large result from the cache of the tool call that
        # stored it.
        self.tool_activities = ToolActivities(self.registry, transcripts=lambda: self.model_activities.transcripts)
        # Streamed text is pushed to subscribers from here as it is generated (activities/stream_broker.py).
        self.stream_broker = StreamBroker() if stream_broker_enabled() else None
        super().__init__(
            PLUGIN_NAME,
            data_converter=lambda existing: stalwart_converter(existing, self.storage),
            workflows=[AgentWorkflow],
            activities=[
                self.model_activities.model_turn,
                self.model_activities.archive_steps,
                self.tool_activities.describe_tools,
                self.tool_activities.run_tool,
                a2a_describe,
                a2a_delegate,
                agent_result,
                agent_send,
                retried_calls,
            ],
            workflow_runner=self._workflow_runner,
            interceptors=[
                *telemetry.tracing_interceptors(),
                redacting.RedactingInterceptor(),
                sent_messages.AcceptedMessages(),  # a sent message reaches the model call without a read
                *([telemetry.TelemetryInterceptor()] if self.tracing else []),
                *([StreamBrokerInterceptor(self.stream_broker)] if self.stream_broker else []),
            ],
            run_context=self._open_while_worker_runs,
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Add our workflow and activities, and make sure the worker's client speaks our payloads."""
        if any(w is AgentWorkflow for w in config.get("workflows") or ()):
            raise PluginError(
                "StalwartPlugin was applied twice to one worker: pass it to Client.connect(plugins=[...]) "
                "or to Worker(plugins=[...]), not both (build_worker adds it for you)."
            )
        adopted = self._adopt_tracing(config)
        config = super().configure_worker(config)
        client = config.get("client")
        config = self._one_tracing_interceptor(config)
        if adopted:
            config["interceptors"] = [*(config.get("interceptors") or ()), telemetry.TelemetryInterceptor()]
        if (
            self.metrics_port is not None
            and client is not None
            and not telemetry.runtime_serves(client.service_client.config.runtime, self.metrics_port)
        ):
            raise PluginError(
                f"metrics_port={self.metrics_port!r} needs the worker's client to run on the runtime that serves "
                "them, made before it connects: connect with stalwart.client.connection.connect(metrics_port=...) "
                "or Client.connect(..., runtime=stalwart.workers.telemetry.metrics_runtime(port)), or pass "
                "StalwartPlugin(metrics_port=...) to Client.connect instead of the worker"
            )
        if client is not None:
            current = client.data_converter
            wanted = stalwart_converter(current, self.storage)
            if wanted is not current:
                # Passed to the worker alone: its client must still carry our contracts as JSON.
                config["client"] = Client(**{**client.config(), "data_converter": wanted})  # type: ignore[arg-type]
        # The streamed answer and tool cancellation travel in heartbeats: they must reach the server quickly.
        throttle = config.get("max_heartbeat_throttle_interval")
        if throttle is None or throttle > HEARTBEAT_THROTTLE:
            config["max_heartbeat_throttle_interval"] = HEARTBEAT_THROTTLE
        worker_client = config.get("client")
        if self.stream_broker is not None and worker_client is not None:
            # Clients find the broker in the identity the server shows for this worker's polls.
            self.stream_broker.converter = worker_client.data_converter
            identity = config.get("identity") or worker_client.identity
            if IDENTITY_MARK not in identity:
                config["identity"] = f"{identity}{IDENTITY_MARK}{self.stream_broker.bind()}"
        return config

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        """Given to `Client.connect` with `metrics_port`: the connection runs on a runtime serving Prometheus."""
        if self.metrics_port is not None and config.runtime is None:
            config.runtime = telemetry.metrics_runtime(self.metrics_port)
        return await next(config)

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Run the worker; with metrics, keep the approvals-waiting gauge; with traces, flush them when it stops."""
        try:
            if self.metrics_port is not None:
                async with telemetry.approvals_gauge(worker.client):
                    await super().run_worker(worker, next)
            else:
                await super().run_worker(worker, next)
        finally:
            if self.tracing:
                telemetry.flush()

    def _workflow_runner(self, runner: WorkflowRunner | None) -> WorkflowRunner:
        runner = _share_deterministic_modules(runner)
        if self.tracing and isinstance(runner, SandboxedWorkflowRunner):
            # As temporalio.contrib.opentelemetry.OpenTelemetryPlugin does: one OpenTelemetry context for all.
            restrictions = runner.restrictions.with_passthrough_modules("opentelemetry")
            runner = dataclasses.replace(runner, restrictions=restrictions)
        return runner

    def _adopt_tracing(self, config: WorkerConfig) -> bool:
        """A client that already traces with the SDK's OpenTelemetryPlugin gets Stalwart's GenAI spans too,
        without an endpoint variable or a tracer provider given to us."""
        client = config.get("client")
        if self.tracing or client is None:
            return False
        self.tracing = telemetry.adopt_tracing(client.config(active_config=True).get("interceptors", []))
        return self.tracing

    def _one_tracing_interceptor(self, config: WorkerConfig) -> WorkerConfig:
        """Drop our OpenTelemetry interceptor when the client already has one (a user's OpenTelemetryPlugin):
        two would make every span twice."""
        ours = telemetry.tracing_interceptors()
        client = config.get("client")
        if not ours or client is None:
            return config
        on_client = client.config(active_config=True).get("interceptors", [])
        if telemetry.has_tracing_interceptor([i for i in on_client if i not in ours]):
            config["interceptors"] = [i for i in config.get("interceptors") or () if i not in ours]
        return config

    @asynccontextmanager
    async def _open_while_worker_runs(self) -> AsyncIterator[None]:
        """Close MCP connections (stopping stdio servers) and SDK clients when the worker stops, however it stops;
        first, let the records of calls that ended reach storage (`InFlight.drain`)."""
        try:
            with secrets.allowing(self.allowed_env):
                if self.stream_broker is None:
                    yield
                else:
                    async with self.stream_broker.serving():
                        yield
        finally:
            try:
                await asyncio.gather(self.model_activities.drain(), self.tool_activities.drain())
            finally:  # a stop cut short while it waits for the records still closes what the worker opened
                try:
                    await self.tool_activities.aclose()
                finally:
                    await self.model_activities.clients.aclose()


def _share_deterministic_modules(runner: WorkflowRunner | None) -> WorkflowRunner:
    """Import the contracts and the workflow code once per worker instead of once per sandboxed workflow run.

    `AgentWorkflow` runs outside the sandbox (see its definition); this is for the sandboxed
    workflows beside it, a user's own, that import our contracts (to start an agent as a child,
    say). The sandbox re-imports every module a workflow imports for each new run and keeps that
    copy while the run is cached. These modules hold no state and make no non-deterministic call
    (tests/test_layers.py checks the calls, since the sandbox does not see them), so all runs can
    share one copy.
    """
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner
    restrictions = runner.restrictions.with_passthrough_modules(*SHARED_MODULES)
    return dataclasses.replace(runner, restrictions=restrictions)


def default_tool_registry() -> ToolRegistry:
    """A registry holding the built-in tools (`calculator`, `echo`, `http_get`, `read_file`)."""
    registry = ToolRegistry()
    registry.register_module(builtin)
    return registry
