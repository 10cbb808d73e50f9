"""Prometheus metrics of a worker: the SDK's own and Stalwart's, scraped from the endpoint as Prometheus would.

Each test serves on a port of its own (one SDK runtime each), so counts start at zero. Runs go on the real dev
server; the models are the real OpenAI SDK against the local wire server.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from test_traces import _team

from stalwart.client.api import StalwartClient
from stalwart.client.connection import connect
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers import telemetry
from stalwart.workers.dev_server import free_port
from stalwart.workers.search_attributes import ensure_search_attributes
from stalwart.workers.worker import build_worker

from support.approvals import until_pending
from support.prometheus import scrape, value
from wire_server.script import Call, Reply
from wire_server.server import WireServer


def stalwart_lines(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line.startswith("stalwart_"))


@pytest.fixture
async def wire(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-telemetry-0123456789")
    server = WireServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def metered(dev_env):
    """A client of the dev server whose runtime serves metrics on a port of this test's own."""
    port = free_port()
    client = await connect(dev_env.address, from_config=False, metrics_port=f"127.0.0.1:{port}")
    return client, port


async def _run(client, agent: AgentSpec, goal: str, task_queue: str) -> AgentResult:
    return await client.execute_workflow(
        WORKFLOW_TYPE,
        RunInput(agent=agent, goal=goal),
        id=f"metered-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        result_type=AgentResult,
    )


async def test_a_run_is_counted_by_agent_model_and_stop_reason(metered, wire):
    client, port = metered
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue=task_queue, metrics_port=f"127.0.0.1:{port}"):
        result = await _run(client, _team(wire), "What is 17*23, and what are qubits?", task_queue)
        text = await scrape(port)
    assert result.stop_reason == "done"
    lead = {"agent": "lead", "provider": "openai", "model": "gpt-4.1-mini"}
    assert value(text, "stalwart_runs_started_total", agent="lead") == 1
    assert value(text, "stalwart_runs_started_total", agent="researcher") == 1
    assert value(text, "stalwart_runs_finished_total", agent="lead", stop_reason="done") == 1
    assert value(text, "stalwart_runs_finished_total", agent="researcher", stop_reason="done") == 1
    assert value(text, "stalwart_steps_total", **lead) == 3
    assert value(text, "stalwart_steps_total", agent="researcher") == 2
    assert value(text, "stalwart_input_tokens_total", **lead) == 30 + 20 + 50
    assert value(text, "stalwart_output_tokens_total", **lead) == 5 + 8 + 7
    lead_cost = sum(step.usage.cost_usd for step in result.steps if step.role == "assistant" and step.usage)
    assert value(text, "stalwart_model_cost_usd_sum", **lead) == pytest.approx(lead_cost)
    assert value(text, "stalwart_model_cost_usd_sum", **lead) > 0
    assert value(text, "stalwart_model_latency_seconds_count", **lead, outcome="ok") == 3
    assert value(text, "stalwart_tool_latency_seconds_count", tool="calculator", outcome="ok") == 1
    assert value(text, "stalwart_tool_latency_seconds_count", tool="echo", outcome="ok") == 1
    assert value(text, "stalwart_tool_errors_total") == 0
    assert value(text, "temporal_activity_execution_latency_count") > 0, "the SDK's own metrics are served too"


async def test_tool_errors_are_counted_by_tool(metered, wire):
    client, port = metered
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    script = wire.script(
        Reply(calls=(Call("calculator", {"expression": "1/0"}), Call("calculator", {"expression": "2+2"}))),
        Reply(text="4, and 1/0 is undefined."),
    )
    agent = AgentSpec(name="maths", model="openai:gpt-4.1-mini", base_url=script.openai_base_url, tools=["calculator"])
    async with build_worker(client, task_queue=task_queue, metrics_port=f"127.0.0.1:{port}"):
        await _run(client, agent, "2+2 and 1/0?", task_queue)
        text = await scrape(port)
    assert value(text, "stalwart_tool_errors_total", tool="calculator") == 1
    assert value(text, "stalwart_tool_latency_seconds_count", tool="calculator", outcome="error") == 1
    assert value(text, "stalwart_tool_latency_seconds_count", tool="calculator", outcome="ok") == 1


async def test_replaying_a_finished_run_counts_nothing_again(metered, wire):
    """A worker without a cache replays every workflow task from the start, and replays the whole finished
    history again to answer a query: the counts stay those of one run."""
    client, port = metered
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    options = {"task_queue": task_queue, "metrics_port": f"127.0.0.1:{port}", "max_cached_workflows": 0}
    run_id = f"replayed-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, **options):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            RunInput(agent=_team(wire), goal="What is 17*23, and what are qubits?"),
            id=run_id,
            task_queue=task_queue,
            result_type=AgentResult,
        )
        await handle.result()
        after_run = await scrape(port)
    async with build_worker(client, **options):
        for _ in range(3):
            await StalwartClient(client, task_queue=task_queue).get(run_id).state()
        after_replays = await scrape(port)
    assert value(after_run, "stalwart_runs_started_total", agent="lead") == 1
    assert value(after_run, "stalwart_runs_finished_total", agent="lead", stop_reason="done") == 1
    assert value(after_run, "stalwart_steps_total", agent="lead") == 3
    assert stalwart_lines(after_replays) == stalwart_lines(after_run)


async def test_runs_waiting_for_approval_are_a_gauge(metered, wire, monkeypatch, dev_env):
    monkeypatch.setattr(telemetry, "APPROVALS_SAMPLE_SECONDS", 0.2)
    client, port = metered
    await ensure_search_attributes(client)
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    script = wire.script(Reply(calls=(Call("echo", {"text": "hi"}),)), Reply(text="Said hi."))
    agent = AgentSpec(
        name="careful",
        model="openai:gpt-4.1-mini",
        base_url=script.openai_base_url,
        tools=["echo"],
        require_approval=["echo"],
    )
    stalwart = StalwartClient(client, task_queue=task_queue)
    async with build_worker(client, task_queue=task_queue, metrics_port=f"127.0.0.1:{port}"):
        # The gauge counts the whole namespace: runs other tests left waiting are the baseline.
        while "stalwart_approvals_waiting" not in (text := await scrape(port)):
            await asyncio.sleep(0.1)
        baseline = value(text, "stalwart_approvals_waiting")
        handle = await stalwart.start(agent, "Say hi")
        pending = await until_pending(handle)
        while value(await scrape(port), "stalwart_approvals_waiting") < baseline + 1:
            await asyncio.sleep(0.1)
        text = await scrape(port)
        assert value(text, "stalwart_approvals_requested_total", agent="careful", tool="echo") == 1
        await handle.approve(pending[0].call_id)
        assert (await handle.result()).answer == "Said hi."
        while value(await scrape(port), "stalwart_approvals_waiting") > baseline:
            await asyncio.sleep(0.1)


async def test_the_plugin_given_to_client_connect_serves_metrics(dev_env, wire):
    from temporalio.client import Client
    from temporalio.worker import Worker

    from stalwart.activities.storage.converter import stalwart_converter
    from stalwart.workers.plugin import StalwartPlugin

    port = free_port()
    plugin = StalwartPlugin(metrics_port=f"127.0.0.1:{port}")
    client = await Client.connect(dev_env.address, plugins=[plugin], data_converter=stalwart_converter())
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=task_queue):
        await _run(client, AgentSpec(name="plain", scripted=[{"text": "Hi."}]), "Hi", task_queue)
        text = await scrape(port)
    assert value(text, "stalwart_runs_finished_total", agent="plain", stop_reason="done") == 1


async def test_metrics_on_a_client_connected_without_them_say_how_to_connect(dev_env):
    with pytest.raises(ValueError, match=r"connect\(metrics_port=\.\.\.\)"):
        build_worker(dev_env.client, task_queue="unused", metrics_port=f"127.0.0.1:{free_port()}")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("99999", "99999 is not a port number: give one from 1 to 65535"),
        ("0", "0 is not a port number: give one from 1 to 65535"),
        ("nohost.invalid:9464", "'nohost.invalid' is not an IP address"),
    ],
)
def test_a_metrics_port_that_cannot_be_one_is_said_so_not_called_a_port_in_use(given: str, said: str):
    import os
    import subprocess
    import sys

    env = {**os.environ, "TEMPORAL_ADDRESS": "localhost:1", "HOME": "/nonexistent"}
    done = subprocess.run(
        [sys.executable, "-m", "stalwart.client.cli", "worker", "--metrics-port", given],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "another process" not in done.stderr, done.stderr


def test_localhost_serves_metrics_on_the_loopback_address():
    """`--metrics-port localhost:9464` is what people type; the SDK's exporter takes IP addresses only."""
    port = free_port()
    assert telemetry.metrics_address(f"localhost:{port}") == f"127.0.0.1:{port}"
    assert telemetry.metrics_address(f"[::1]:{port}") == f"[::1]:{port}"
    assert telemetry.metrics_address(str(port)) == f"0.0.0.0:{port}"
