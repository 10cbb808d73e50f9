"""Traces of agent runs: GenAI spans nested as the run nests, and the same tree however often the run is replayed.

The worker exports into an in-memory exporter through the replay-safe tracer provider of
`temporalio.contrib.opentelemetry`. A worker without a workflow cache (`max_cached_workflows=0`) replays the
whole history at every workflow task, which is what a worker restart or a cache eviction does: the tree must come
out exactly as from a worker that never replayed, with no span twice and none missing.
"""

from __future__ import annotations

import uuid

import pytest
from span_trees import signature, spans_of_trace, tree

from stalwart.contracts.agent import AgentSpec, SubAgent
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.run import AgentResult
from stalwart.contracts.run_input import RunInput
from stalwart.workers.worker import build_worker

from wire_server.script import Call, Reply
from wire_server.server import WireServer

EXPECTED = (
    "invoke_agent lead",
    (
        ("chat gpt-4.1-mini", ()),
        ("execute_tool calculator", ()),
        ("chat gpt-4.1-mini", ()),
        (
            "execute_tool researcher",
            (
                (
                    "invoke_agent researcher",
                    (("chat gpt-4.1-mini", ()), ("execute_tool echo", ()), ("chat gpt-4.1-mini", ())),
                ),
            ),
        ),
        ("chat gpt-4.1-mini", ()),
    ),
)


@pytest.fixture
async def wire(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-telemetry-0123456789")
    server = WireServer()
    await server.start()
    yield server
    await server.stop()


def _team(wire: WireServer) -> AgentSpec:
    """A lead that calls a tool, then delegates to a researcher that calls a tool of its own, then answers."""
    lead = wire.script(
        Reply(calls=(Call("calculator", {"expression": "17*23"}),), input_tokens=30, output_tokens=5),
        Reply(calls=(Call("researcher", {"task": "find qubits"}),)),
        Reply(text="391, and qubits.", input_tokens=50, output_tokens=7),
    )
    research = wire.script(Reply(calls=(Call("echo", {"text": "qubits"}),)), Reply(text="Qubits."))
    researcher = AgentSpec(
        name="researcher", model="openai:gpt-4.1-mini", base_url=research.openai_base_url, tools=["echo"]
    )
    return AgentSpec(
        name="lead",
        model="openai:gpt-4.1-mini",
        base_url=lead.openai_base_url,
        tools=["calculator"],
        sub_agents=[SubAgent(name="researcher", spec=researcher)],
    )


async def _traced_run(env, exporter, wire: WireServer, **worker_options) -> tuple[AgentResult, list]:
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    run_id = f"traced-{uuid.uuid4().hex[:8]}"
    async with build_worker(env.client, task_queue=task_queue, **worker_options):
        result = await env.client.execute_workflow(
            WORKFLOW_TYPE,
            RunInput(agent=_team(wire), goal="What is 17*23, and what are qubits?"),
            id=run_id,
            task_queue=task_queue,
            result_type=AgentResult,
        )
    return result, spans_of_trace(exporter.get_finished_spans(), root_name="invoke_agent lead", run_id=run_id)


async def test_a_run_is_one_span_tree_with_sub_agents_nested_under_their_call(dev_env, traced, wire):
    result, spans = await _traced_run(dev_env, traced, wire)
    assert result.stop_reason == "done"
    assert signature(tree(spans)) == EXPECTED
    lead_run = next(s for s in spans if s.name == "invoke_agent lead")
    assert lead_run.attributes["gen_ai.agent.name"] == "lead"
    assert lead_run.attributes["stalwart.stop_reason"] == "done"
    assert lead_run.attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    first_chat = min((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert (
        dict(first_chat.attributes).items()
        >= {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4.1-mini",
            "gen_ai.response.model": "gpt-4.1-mini",
            "gen_ai.usage.input_tokens": 30,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.agent.name": "lead",
        }.items()
    )
    assert first_chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    tool = next(s for s in spans if s.name == "execute_tool calculator")
    assert tool.attributes["gen_ai.tool.name"] == "calculator"
    assert tool.attributes["gen_ai.tool.type"] == "function"


async def test_replaying_every_workflow_task_gives_the_same_tree_without_duplicates(dev_env, traced, wire):
    cached, cached_spans = await _traced_run(dev_env, traced, wire)
    replayed, replayed_spans = await _traced_run(dev_env, traced, wire, max_cached_workflows=0)
    assert (cached.answer, replayed.answer) == ("391, and qubits.", "391, and qubits.")
    assert signature(tree(replayed_spans)) == signature(tree(cached_spans)) == EXPECTED
    ids = [s.context.span_id for s in replayed_spans]
    assert len(ids) == len(set(ids)), "a span was exported twice"
    parents = {s.parent.span_id for s in replayed_spans if s.parent is not None}
    assert parents <= set(ids), "a span's parent was never exported"


@pytest.mark.parametrize("cache", ["cached", "replaying every task"])
async def test_a_session_is_a_span_per_run_with_a_turn_span_per_message(dev_env, traced, cache):
    from stalwart.client.api import StalwartClient
    from stalwart.contracts.agent import ScriptedReply, SessionSettings

    turns = 5
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    agent = AgentSpec(
        name="chatty",
        scripted=[ScriptedReply(text=f"answer {n}") for n in range(1, turns + 1)],
        session=SessionSettings(continue_as_new_events=20),
    )
    options = {"max_cached_workflows": 0} if cache == "replaying every task" else {}
    async with build_worker(dev_env.client, task_queue=task_queue, **options):
        session = await StalwartClient(dev_env.client, task_queue=task_queue).start_session(agent)
        for n in range(1, turns + 1):
            await session.send(f"message {n}")
        closed = await session.close()
        runs = len(await session.histories())
    assert closed.stop_reason == "closed" and runs >= 2, "the session must continue as new at least once"
    spans = spans_of_trace(traced.get_finished_spans(), root_name="session chatty", run_id=session.run_id)
    ids = [s.context.span_id for s in spans]
    assert len(ids) == len(set(ids)), "a span was exported twice"
    session_spans = sorted((s for s in spans if s.name == "session chatty"), key=lambda s: s.start_time)
    assert len(session_spans) == runs
    assert [s.attributes.get("stalwart.continued_as_new", False) for s in session_spans] == [True] * (runs - 1) + [
        False
    ]
    assert session_spans[-1].attributes["stalwart.stop_reason"] == "closed"
    for earlier, later in zip(session_spans, session_spans[1:], strict=False):
        assert later.parent.span_id == earlier.context.span_id, "each run of the chain nests under the one before"
    turn_spans = [s for s in spans if s.name == "invoke_agent chatty"]
    assert sorted(s.attributes["stalwart.turn"] for s in turn_spans) == list(range(1, turns + 1))
    assert all(s.attributes["gen_ai.conversation.id"] == session.run_id for s in turn_spans)
    by_id = {s.context.span_id: s for s in spans}
    assert all(by_id[s.parent.span_id].name == "session chatty" for s in turn_spans)
    chats = [s for s in spans if s.name == "chat scripted"]
    assert len(chats) == turns and all(by_id[s.parent.span_id].name == "invoke_agent chatty" for s in chats)


async def test_an_a2a_delegation_to_a_stalwart_agent_is_one_trace_across_both(dev_env, traced, monkeypatch):
    """The delegating worker's `invoke_agent` client span sends `traceparent`; the A2A server (here a Stalwart
    agent served over A2A) starts its run under it, so the remote agent's spans nest under the call."""
    from stalwart.client.a2a_server import A2AAgentServer
    from stalwart.client.api import StalwartClient
    from stalwart.client.connection import connect
    from stalwart.contracts.agent import ScriptedReply, ScriptedToolCall
    from stalwart.workers.dev_server import free_port

    from support.a2a_http import serving

    monkeypatch.delenv("DEBUG_MOCK_RESPONSES", raising=False)
    client = await connect(dev_env.address, from_config=False)  # traces, as the process does
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    port = free_port()
    explainer = AgentSpec(name="explainer", scripted=[ScriptedReply(text="Qubits are two-level systems.")])
    server = A2AAgentServer(
        StalwartClient(client, task_queue=task_queue), explainer, public_url=f"http://127.0.0.1:{port}/"
    )
    lead = AgentSpec(
        name="lead",
        sub_agents=[SubAgent(name="remote", url=f"http://127.0.0.1:{port}/")],
        scripted=[
            ScriptedReply(tool_calls=[ScriptedToolCall(name="remote", arguments={"task": "Explain qubits"})]),
            ScriptedReply(text="Done."),
        ],
    )
    run_id = f"traced-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue=task_queue), serving(server.app(), port):
        result = await client.execute_workflow(
            WORKFLOW_TYPE,
            RunInput(agent=lead, goal="Explain"),
            id=run_id,
            task_queue=task_queue,
            result_type=AgentResult,
        )
    assert result.steps[2].result == "Qubits are two-level systems."
    spans = spans_of_trace(traced.get_finished_spans(), root_name="invoke_agent lead", run_id=run_id)
    assert signature(tree(spans)) == (
        "invoke_agent lead",
        (
            ("chat scripted", ()),
            (
                "execute_tool remote",
                (("invoke_agent explainer", (("invoke_agent explainer", (("chat scripted", ()),)),)),),
            ),
            ("chat scripted", ()),
        ),
    )
    by_id = {s.context.span_id: s for s in spans}
    [client_span] = [s for s in spans if s.parent and by_id[s.parent.span_id].name == "execute_tool remote"]
    [remote_run] = [s for s in spans if s.name == "invoke_agent explainer" and s is not client_span]
    assert client_span.kind.name == "CLIENT" and client_span.attributes["stalwart.a2a.state"] == "completed"
    assert remote_run.parent.span_id == client_span.context.span_id


async def test_failed_attempts_and_a_failed_tool_are_error_spans(dev_env, traced, wire):
    """A model call that failed once (HTTP 500) and was retried is two `chat` spans, the first with status ERROR;
    a tool call that returned an error is an ERROR `execute_tool` span; the run still ends `done`."""
    from wire_server.script import Fail

    script = wire.script(
        Fail(500, "server_error", "The server had an error"),
        Reply(calls=(Call("calculator", {"expression": "1/0"}),)),
        Reply(text="1/0 is undefined."),
    )
    agent = AgentSpec(name="shaky", model="openai:gpt-4.1-mini", base_url=script.openai_base_url, tools=["calculator"])
    task_queue = f"tq-{uuid.uuid4().hex[:8]}"
    run_id = f"shaky-{uuid.uuid4().hex[:8]}"
    async with build_worker(dev_env.client, task_queue=task_queue):
        result = await dev_env.client.execute_workflow(
            WORKFLOW_TYPE, RunInput(agent=agent, goal="1/0?"), id=run_id, task_queue=task_queue, result_type=AgentResult
        )
    assert result.stop_reason == "done"
    spans = spans_of_trace(traced.get_finished_spans(), root_name="invoke_agent shaky", run_id=run_id)
    chats = sorted((s for s in spans if s.name == "chat gpt-4.1-mini"), key=lambda s: s.start_time)
    assert [s.status.status_code.name for s in chats] == ["ERROR", "UNSET", "UNSET"]
    assert chats[0].attributes["error.type"] == "ModelUnavailableError"
    [tool] = [s for s in spans if s.name == "execute_tool calculator"]
    assert tool.status.status_code.name == "ERROR" and tool.attributes["error.type"] == "tool_error"
    run = next(s for s in spans if s.name == "invoke_agent shaky")
    assert run.status.status_code.name == "UNSET" and run.attributes["stalwart.stop_reason"] == "done"
