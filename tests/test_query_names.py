"""The Temporal Web UI lists a run's queries, signals and updates from the SDK's `__temporal_workflow_metadata`
query: the run's handlers are dynamic, which the SDK lists as one unnamed entry each, so the run names their routes."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.api.sdk.v1 import WorkflowInteractionDefinition, WorkflowMetadata

from stalwart.contracts.agent import AgentSpec, ScriptedReply
from stalwart.workers.worker import build_worker
from stalwart.workflows import arguments, interactions

TEMPORAL = Path(sys.prefix) / "bin" / "temporal"


async def _metadata(stalwart_client, dev_env, task_queue, opened) -> WorkflowMetadata:
    agent = AgentSpec(name="named", scripted=[ScriptedReply(text="hi")] * 3)
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await stalwart_client.start_session(agent)
        opened.append(session.run_id)
        handle = dev_env.client.get_workflow_handle(session.run_id)
        return await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)


async def test_the_metadata_lists_the_runs_queries_by_name(stalwart_client, dev_env, task_queue, opened):
    metadata = await _metadata(stalwart_client, dev_env, task_queue, opened)
    names = [query.name for query in metadata.definition.query_definitions]
    assert {"state", "pending_approvals", "events"} <= set(names)
    assert "" not in names  # the dynamic handler, which the SDK listed without a name
    assert "__stack_trace" in names and "__temporal_workflow_metadata" in names  # the SDK's own stay listed
    assert all(query.description for query in metadata.definition.query_definitions if not query.name.startswith("__"))


async def test_the_metadata_lists_the_runs_signals_and_updates_by_name(stalwart_client, dev_env, task_queue, opened):
    metadata = await _metadata(stalwart_client, dev_env, task_queue, opened)
    assert [s.name for s in metadata.definition.signal_definitions] == sorted(arguments.SIGNALS)
    assert [u.name for u in metadata.definition.update_definitions] == sorted(arguments.UPDATES)


async def test_the_metadata_still_carries_the_runs_current_details(stalwart_client, dev_env, task_queue, opened):
    metadata = await _metadata(stalwart_client, dev_env, task_queue, opened)
    assert "named" in metadata.current_details  # the agent's name, which the run's details show


async def test_the_temporal_cli_still_queries_state_by_name(stalwart_client, dev_env, task_queue, opened):
    agent = AgentSpec(name="named", scripted=[ScriptedReply(text="hi")] * 3)
    command = [str(TEMPORAL), "workflow", "query", "--type", "state", "--address", dev_env.address, "-o", "json"]
    async with build_worker(dev_env.client, task_queue=task_queue):
        session = await stalwart_client.start_session(agent)
        opened.append(session.run_id)
        done = await asyncio.to_thread(
            subprocess.run,
            [*command, "--workflow-id", session.run_id],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert '"agent": "named"' in done.stdout, done.stdout


def test_metadata_of_a_shape_this_version_does_not_know_is_answered_as_the_sdk_gave_it(monkeypatch, caplog):
    unknown: Any = WorkflowInteractionDefinition(name="a later SDK's answer")  # no `definition` to rename in
    handlers: dict[str, Any] = {interactions.METADATA_QUERY: lambda: unknown}
    monkeypatch.setattr(workflow, "get_query_handler", handlers.get)
    monkeypatch.setattr(workflow, "set_query_handler", handlers.__setitem__)
    monkeypatch.setattr(workflow, "logger", logging.getLogger("workflow"))
    interactions.name_the_routes()
    assert handlers[interactions.METADATA_QUERY]() is unknown
    assert "answered in a shape this version does not know" in caplog.text
