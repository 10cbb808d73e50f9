"""What the model is sent of a long conversation: a window that fits, while the record keeps everything."""

from __future__ import annotations

from stalwart.activities.context_window import model_window
from stalwart.contracts.agent import AgentSpec, ContextSettings, ScriptedReply, SessionSettings
from stalwart.contracts.messages import Message, ToolCall, ToolResult


def _agent(**context: object) -> AgentSpec:
    return AgentSpec(name="windowed", context=ContextSettings(**context))


def _conversation(turns: int, size: int) -> list[Message]:
    messages = []
    for n in range(turns):
        messages.append(Message(role="user", content=f"q{n} " + "x" * size))
        messages.append(
            Message(role="assistant", content=f"a{n}", tool_calls=[ToolCall(id=f"c{n}", name="echo", arguments={})])
        )
        messages.append(
            Message(role="tool", tool_results=[ToolResult(call_id=f"c{n}", name="echo", content="y" * size)])
        )
    return messages


def test_a_conversation_longer_than_the_window_keeps_the_first_message_and_the_newest_that_fit():
    messages = _conversation(turns=50, size=1000)
    window = model_window(messages, _agent(max_input_tokens=5000))
    assert window[0] is messages[0]
    assert window[-1] == messages[-1]
    assert sum(len(m.content) + sum(len(r.content) for r in m.tool_results) for m in window) <= 5000 * 4 + 2000
    assert len(window) < len(messages)


def test_the_window_never_starts_with_a_tool_result_whose_call_was_dropped():
    messages = _conversation(turns=50, size=1000)
    for budget in range(1000, 8000, 97):
        window = model_window(messages, _agent(max_input_tokens=budget))
        assert window[1].role != "tool"


def test_strategy_none_sends_everything():
    messages = _conversation(turns=50, size=1000)
    assert len(model_window(messages, _agent(strategy="none", max_input_tokens=1000))) == len(messages)


async def test_a_session_longer_than_its_window_sends_the_model_a_bounded_input(stalwart, worker_with):
    agent = AgentSpec(
        name="windowed",
        scripted=[ScriptedReply(text=f"answer {n} " + "z" * 800) for n in range(30)],
        session=SessionSettings(),
        context=ContextSettings(max_input_tokens=2000),
    )
    async with worker_with():
        session = await stalwart.start_session(agent)
        for n in range(30):
            await session.send(f"message {n} " + "m" * 800)
        seen = await session.model_input(step=30)
        state = await session.state()
    assert len(state.steps) == 60, "the record keeps every message"
    assert seen.messages[0].content.startswith("message 0 ")
    assert seen.messages[-1].content.startswith("message 29 ")
    assert sum(len(m.content) for m in seen.messages) <= 2000 * 4 + 1000
