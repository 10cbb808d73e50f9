"""Whole runs on the time-skipping server: describe -> scripted model -> run_tool -> a real MCP server -> answer."""

from __future__ import annotations

import json
import os

import pytest
from mcp_test_servers import http_demo, stdio_demo
from temporalio.api.enums.v1 import EventType
from temporalio.worker import Replayer

from stalwart.client.api import StalwartClient
from stalwart.contracts.activities import DescribeToolsResult
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.names import DESCRIBE_TOOLS_ACTIVITY, MODEL_ACTIVITY
from stalwart.workers.worker import build_worker
from stalwart.workflows import AgentWorkflow

from support.repo_paths import AGENTS_DIR

pytestmark = pytest.mark.slow


def _calls(*calls: tuple[str, dict]) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=args) for name, args in calls])


def _tool_steps(result):
    return [step for step in result.steps if step.role == "tool"]


async def _run(env, task_queue, agent, goal="go", **kwargs):
    async with build_worker(env.client, task_queue=task_queue):
        return await StalwartClient(env.client, task_queue=task_queue).run(agent, goal, **kwargs)


async def test_example_notes_agent_answers_from_its_stdio_server(time_skipping_env, task_queue):
    result = await _run(
        time_skipping_env, task_queue, AGENTS_DIR / "notes.toml", "How much longer is production retention?"
    )
    assert result.stop_reason == "done"
    steps = _tool_steps(result)
    assert [s.tool_name for s in steps] == ["search_notes", "read_note", "calculator"]
    assert steps[0].result == "retention"
    assert steps[1].result.startswith("Production keeps run histories for 30 days")


async def test_agent_calls_an_http_server_with_a_header_from_the_worker_env(
    time_skipping_env, task_queue, http_mcp_url, monkeypatch
):
    monkeypatch.setenv("STALWART_TEST_MCP_TOKEN", "s3cret")
    agent = AgentSpec(
        name="web",
        tools=["calculator"],
        mcp_servers=[http_demo(http_mcp_url, headers={"X-Token": "${STALWART_TEST_MCP_TOKEN}"})],
        scripted=[_calls(("header", {"name": "x-token"})), ScriptedReply(text="done")],
    )
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await StalwartClient(time_skipping_env.client, task_queue=task_queue).start(agent, "go")
        result = await handle.result()
    # The demo's `header` tool answers with the header's value: the worker redacts it from the tool's result, as
    # from everything an activity returns, so the model is told `[redacted]` (which proves the header was sent).
    assert _tool_steps(result)[0].result == "[redacted]"
    # The worker fills the header in from its environment: everywhere the header is recorded (the run's
    # input, the inputs of its activities, the tool list describe_tools returned) holds only the template.
    template = {"X-Token": "${STALWART_TEST_MCP_TOKEN}"}
    run_input = await handle.run_input()
    assert run_input.agent.mcp_servers[0].headers == template
    assert "s3cret" not in run_input.model_dump_json()
    history = await handle.history()
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    configuring = [a for a in scheduled.values() if a.activity_type.name != MODEL_ACTIVITY]
    assert configuring and all(b"s3cret" not in p.data for a in configuring for p in a.input.payloads)
    assert "s3cret" not in history.to_json()
    described = [
        DATA_CONVERTER.payload_converter.from_payloads(
            list(e.activity_task_completed_event_attributes.result.payloads), [DescribeToolsResult]
        )[0]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and scheduled[e.activity_task_completed_event_attributes.scheduled_event_id].activity_type.name
        == DESCRIBE_TOOLS_ACTIVITY
    ]
    assert len(described) == 1
    header_tool = next(t for t in described[0].tools if t.name == "header")
    assert header_tool.server is not None and header_tool.server.headers == template
    assert "s3cret" not in described[0].model_dump_json()


async def test_mcp_tool_error_is_fed_back_and_the_run_goes_on(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="errs",
        tools=["calculator"],
        mcp_servers=[stdio_demo()],
        scripted=[_calls(("fail", {"reason": "disk full"})), ScriptedReply(text="The tool refused: disk full.")],
    )
    result = await _run(time_skipping_env, task_queue, agent)
    assert result.stop_reason == "done"
    step = _tool_steps(result)[0]
    assert step.error is not None and "refused: disk full" in step.error
    assert result.answer == "The tool refused: disk full."


async def test_stdio_server_that_crashes_mid_run_is_restarted_for_the_next_call(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="crashy",
        tools=["calculator"],
        mcp_servers=[stdio_demo()],
        scripted=[_calls(("pid", {})), _calls(("crash", {})), _calls(("pid", {})), ScriptedReply(text="survived")],
    )
    result = await _run(time_skipping_env, task_queue, agent)
    before, crashed, after = _tool_steps(result)
    assert crashed.error is not None and "closed the connection while running 'crash'" in crashed.error
    assert after.error is None
    assert after.result != before.result
    assert result.answer == "survived"


async def test_worker_shutdown_stops_its_stdio_servers(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="pids",
        tools=["calculator"],
        mcp_servers=[stdio_demo()],
        scripted=[_calls(("pid", {})), ScriptedReply(text="ok")],
    )
    result = await _run(time_skipping_env, task_queue, agent)
    pid = int(_tool_steps(result)[0].result)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_bound_parameter_of_an_mcp_tool_overrides_the_model(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="weather",
        tools=["calculator"],
        mcp_servers=[stdio_demo(tools=["weather"])],
        bindings={"weather": {"unit": "preferred_unit"}},
        scripted=[_calls(("weather", {"city": "Oslo", "unit": "kelvin"})), ScriptedReply(text="ok")],
    )
    result = await _run(time_skipping_env, task_queue, agent, inputs={"preferred_unit": "celsius"})
    assert _tool_steps(result)[0].result == "Oslo: 21 degrees celsius"


async def test_describe_tools_input_carries_only_where_the_tools_come_from_not_the_whole_agent(
    time_skipping_env, task_queue
):
    """The run's input holds the whole agent; describe_tools' input used to repeat it in history (instructions,
    script, loop settings). Now it carries the tools, servers and bindings it reads, and the run works as before."""
    instructions = "Answer about the weather in one sentence. " * 40
    agent = AgentSpec(
        name="weather",
        instructions=instructions,
        tools=["calculator"],
        mcp_servers=[stdio_demo(tools=["weather"])],
        bindings={"weather": {"unit": "preferred_unit"}},
        scripted=[_calls(("weather", {"city": "Oslo", "unit": "kelvin"})), ScriptedReply(text="ok")],
    )
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await StalwartClient(time_skipping_env.client, task_queue=task_queue).start(
            agent, "go", inputs={"preferred_unit": "celsius"}
        )
        result = await handle.result()
    assert _tool_steps(result)[0].result == "Oslo: 21 degrees celsius"
    history = await handle.history()
    [describe] = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == DESCRIBE_TOOLS_ACTIVITY
    ]
    [payload] = describe.input.payloads
    sent = json.loads(payload.data)["agent"]
    assert sorted(sent) == ["bindings", "mcp_servers", "name", "sub_agents", "tools"]
    assert sent["tools"] == ["calculator"] and sent["bindings"] == {"weather": {"unit": "preferred_unit"}}
    assert instructions.encode() not in payload.data and len(payload.data) < len(instructions)


async def test_run_with_mcp_tools_replays_from_its_history(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="replayed",
        tools=["calculator"],
        mcp_servers=[stdio_demo()],
        scripted=[_calls(("add", {"a": 2, "b": 3})), ScriptedReply(text="5")],
    )
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        handle = await StalwartClient(time_skipping_env.client, task_queue=task_queue).start(agent, "add")
        await handle.result()
    history = await time_skipping_env.client.get_workflow_handle(handle.run_id).fetch_history()
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=DATA_CONVERTER)
    replay = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


async def test_agent_with_only_mcp_servers_can_call_their_tools(time_skipping_env, task_queue):
    agent = AgentSpec(
        name="mcponly",
        mcp_servers=[stdio_demo()],
        scripted=[_calls(("add", {"a": 1, "b": 2})), ScriptedReply(text="3")],
    )
    result = await _run(time_skipping_env, task_queue, agent)
    assert _tool_steps(result)[0].result == "3"
