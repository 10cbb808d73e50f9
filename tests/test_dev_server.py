"""The embedded dev server (`workers.dev_server`), as tests, benchmarks and `stalwart dev` start it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from stalwart.contracts import names
from stalwart.workers import dev_server
from stalwart.workers.dev_server import DevServer

from support.processes import still_running
from support.prometheus import scrape, value


@contextlib.contextmanager
def _a_taken_port() -> Iterator[int]:
    """A port bound by this process, so nobody else can bind it; not listening, like a client's port."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        yield squatter.getsockname()[1]


@pytest.mark.slow
async def test_a_dev_server_on_a_free_port_takes_another_when_its_port_is_taken(monkeypatch):
    with _a_taken_port() as taken:
        offered = iter([taken])
        really_free = dev_server.free_port
        monkeypatch.setattr(dev_server, "free_port", lambda: next(offered, None) or really_free())
        async with DevServer(port=None, ui_port=None) as server:
            assert server.port != taken
            assert server.process is not None and server.process.poll() is None


def test_a_dev_server_on_a_taken_port_it_was_given_says_so():
    with _a_taken_port() as taken:
        server = DevServer(port=taken, ui_port=None)
        with pytest.raises(
            dev_server.DevServerExited, match=f"can't set frontend port {taken}.*address already in use"
        ):
            asyncio.run(server.start())


@pytest.mark.slow
async def test_a_dev_server_given_the_port_of_a_running_server_refuses_instead_of_using_that_server():
    """That server answered the health check before the new one failed to bind: the command ran on a server it
    did not own, showed the wrong UI, and forgot that server's UI link when it stopped."""
    async with DevServer(port=None, ui_port=None) as running:
        with pytest.raises(dev_server.DevServerExited, match=f"already listens on 127.0.0.1:{running.port}"):
            await DevServer(port=running.port, ui_port=None).start()
        assert running.process is not None and running.process.poll() is None


def test_a_dev_server_that_exits_at_start_quotes_that_start_of_its_log_and_names_the_file(tmp_path):
    db_file = tmp_path / "temporal.db"
    with _a_taken_port() as taken:
        for _ in range(2):  # the second start appends to the log; its error quotes its own lines only
            with pytest.raises(dev_server.DevServerExited) as exited:
                asyncio.run(DevServer(port=taken, ui_port=None, db_file=db_file).start())
    message = str(exited.value)
    assert f"its whole log: {tmp_path / 'temporal.log'}" in message
    assert message.count(f"can't set frontend port {taken}") == 1
    assert (tmp_path / "temporal.log").read_text().count(f"can't set frontend port {taken}") == 2


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's descriptors from /proc")
@pytest.mark.parametrize("persisted", [True, False], ids=["with a database", "in memory"])
async def test_a_dev_server_logs_to_a_file_not_to_a_pipe_nobody_reads(tmp_path, persisted):
    db_file = tmp_path / "temporal.db" if persisted else None
    async with DevServer(port=None, ui_port=None, db_file=db_file) as server:
        assert server.process is not None
        stderr = f"/proc/{server.process.pid}/fd/2"
        assert stat.S_ISREG(os.stat(stderr).st_mode), "a pipe fills once nobody reads it, and the server then blocks"
        if persisted:
            assert os.readlink(stderr) == str(tmp_path / "temporal.log")


OWNER = """
import asyncio, sys
from stalwart.workers.dev_server import DevServer

async def main():
    async with DevServer(port=None, ui_port=None) as server:
        print(server.process.pid, server.port, flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the server is tied to its owner with Linux's prctl")
def test_a_dev_server_stops_when_the_process_that_started_it_is_killed():
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert owner.stdout is not None
    server_pid, port = (int(word) for word in owner.stdout.readline().split())
    try:
        owner.kill()  # SIGKILL: the owner unwinds nothing, so only the kernel can tell the server
        owner.wait()
        deadline = time.monotonic() + 60  # not a speed limit: a bound so a server that outlives it fails, not hangs
        while still_running(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not still_running(server_pid), "the dev server outlived the process that started it"
        with socket.socket() as probe:  # and its port is free for the next `stalwart dev`
            assert probe.connect_ex(("127.0.0.1", port)) != 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server_pid, signal.SIGKILL)


async def _start_runs_with_stalwarts_attributes(client: Client, count: int) -> None:
    """`count` runs started with a search attribute of Stalwart's, on a queue no worker polls: their start and
    their record in the run list are where the server looks up the attribute's definition."""
    attributes = TypedSearchAttributes([SearchAttributePair(names.AGENT_NAME, "probe")])
    for _ in range(count):
        await client.start_workflow(
            "Nobody", id=f"probe-{uuid.uuid4().hex}", task_queue="nobody", search_attributes=attributes
        )


async def _metrics_once_listed(port: int, runs: float) -> str:
    """The server's metrics once they count `runs` runs recorded in the run list: the server publishes its counters
    a second or so late, and a run's record is the last place its attribute's definition is looked up."""
    for _ in range(600):  # a bound so that metrics that never come fail, not hang; not a speed limit
        metrics = await scrape(port)
        if value(metrics, "visibility_persistence_requests", operation="RecordWorkflowExecutionStarted") >= runs:
            return metrics
        await asyncio.sleep(0.1)
    raise AssertionError(f"the server's metrics never counted {runs} runs recorded in its run list")


@pytest.mark.slow
async def test_a_dev_server_does_not_read_search_attribute_definitions_from_its_database_for_every_run():
    metrics_port = dev_server.free_port()
    async with DevServer(port=None, ui_port=None, extra_args=["--metrics-port", str(metrics_port)]) as server:
        client = await Client.connect(server.address)
        await _start_runs_with_stalwarts_attributes(client, 1)  # the definitions are read once, and cached
        before = await _metrics_once_listed(metrics_port, 1)
        await _start_runs_with_stalwarts_attributes(client, 20)
        after = await _metrics_once_listed(metrics_port, 21)
    reads = value(after, "persistence_requests", operation="GetCurrentClusterMetadata") - value(
        before, "persistence_requests", operation="GetCurrentClusterMetadata"
    )
    assert reads < 20, f"the server read the attributes' definitions {reads:.0f} times for 20 runs"


@pytest.mark.slow
async def test_a_search_attribute_added_to_a_running_dev_server_becomes_usable():
    key = SearchAttributeKey.for_keyword("AddedWhileRunning")
    async with DevServer(port=None, ui_port=None) as server:
        client = await Client.connect(server.address)
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=client.namespace,
                search_attributes={key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD},
            )
        )
        attributes = TypedSearchAttributes([SearchAttributePair(key, "yes")])
        # Defined, but not yet in the server's cache: refused until the namespace's next refresh (about 2 s).
        for _ in range(120):  # a bound so that an attribute never usable fails, not hangs; not a speed limit
            try:
                await client.start_workflow("Nobody", id="added", task_queue="nobody", search_attributes=attributes)
                break
            except RPCError as refused:
                assert refused.status == RPCStatusCode.INVALID_ARGUMENT, refused
                await asyncio.sleep(0.5)
        else:
            raise AssertionError(f"{key.name} was added, but the server refused it for a minute")
        described = await client.get_workflow_handle("added").describe()
    assert described.typed_search_attributes.get(key) == "yes"


def test_a_dev_server_is_told_its_http_and_metrics_ports_so_it_cannot_pick_the_one_it_was_given(monkeypatch):
    """Untold, the server picks both at random as it starts, and once picked the very port it was told to serve
    gRPC on (free until then): it exited, "address already in use", failing a CI run. They are now chosen here,
    apart from the ports it was given, even when the free ports offered include those."""
    given, ui = dev_server.free_port(), dev_server.free_port()
    offered = iter([given, ui, given])
    really_free = dev_server.free_port
    monkeypatch.setattr(dev_server, "free_port", lambda: next(offered, None) or really_free())
    command = DevServer(port=given, ui_port=ui).command()
    http, metrics = (int(command[command.index(flag) + 1]) for flag in ("--http-port", "--metrics-port"))
    assert len({given, ui, http, metrics}) == 4
