"""Tool use for models without native tool calling: the tools live in the prompt, actions in the text.

The wrapped provider sees no tools: it gets the seed's system prompt, tool
results as user text (`Tool result: ...`, `Tool execution failed: ...`), and
its own earlier replies as plain text. Its reply is read back into tool
calls, a request for the final answer, or a note about a malformed action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from stalwart.activities.protocols import fenced, json_actions
from stalwart.activities.protocols.prompts import agent_names, fenced_system_prompt, json_system_prompt
from stalwart.activities.protocols.reading import Reading
from stalwart.activities.providers import structured
from stalwart.activities.providers.base import StreamingModelProvider
from stalwart.activities.streaming import TurnObserver
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import LoopSettings
from stalwart.contracts.messages import AssistantTurn, Message, ToolResult
from stalwart.contracts.tools import ToolSpec


class TextProtocol:
    """A streaming provider that speaks a text action protocol to the model it wraps."""

    streaming: Literal[True] = True

    def __init__(
        self,
        inner: StreamingModelProvider,
        prompt: Callable[[str, list[ToolSpec]], str],
        reader: Callable[[str, int, frozenset[str], LoopSettings], Reading],
        gate: Callable[[TurnObserver], Gate],
        *,
        two_phase: bool = False,
    ) -> None:
        self.inner = inner
        self._prompt = prompt
        self._reader = reader
        self._gate = gate
        self.two_phase = two_phase
        """Every reply with tools on is an action, even with no tools to offer (seed 000: `{}` or no action
        asks for the final response in one more call)."""

    def acts(self, context: ModelContext) -> bool:
        """Whether this call's reply is read for actions (else it is the answer)."""
        return context.tools_enabled and (self.two_phase or bool(context.tools))

    async def complete(self, context: ModelContext, observer: TurnObserver) -> AssistantTurn:
        acting = self.acts(context)
        gate = self._gate(observer) if acting else Passthrough(observer)
        turn: AssistantTurn = await self.inner.complete(as_text(context, self._prompt, acting=acting), gate)
        if not acting:
            gate.finish(called_tools=False)
            return turn
        reading = self._reader(turn.text, context.step, agent_names(context.tools), context.agent.loop)
        gate.finish(called_tools=bool(reading.tool_calls) or reading.feedback is not None or reading.wants_final_answer)
        return turn.model_copy(
            update={
                "tool_calls": reading.tool_calls,
                "wants_final_answer": reading.wants_final_answer,
                "feedback": reading.feedback,
            }
        )


def as_text(
    context: ModelContext, prompt: Callable[[str, list[ToolSpec]], str], *, acting: bool = True
) -> ModelContext:
    """The context as a text-only conversation, with the tools described in the system prompt.

    With typed output the prompt also gives the answer's schema; only a call whose reply is the answer (not read
    for actions) asks the provider for it natively, as an action is no answer."""
    update: dict[str, Any] = {"instructions": prompt(context.agent.instructions, context.tools)}
    if context.agent.output is not None:
        update["instructions"] += structured.instructions_note(context.agent.output)
        if acting:
            update["output"] = None
    agent = context.agent.model_copy(update=update)
    agents = agent_names(context.tools)
    messages = [_as_text(m, agents) for m in context.messages]
    return context.model_copy(update={"agent": agent, "tools": [], "tools_enabled": False, "messages": messages})


def _as_text(message: Message, agents: frozenset[str]) -> Message:
    if message.role == "tool":
        return Message(role="user", content=results_text(message.tool_results, agents))
    if message.role == "assistant":
        return Message(role="assistant", content=message.content)
    return message


def results_text(results: list[ToolResult], agents: frozenset[str] = frozenset()) -> str:
    """Tool results as the seed feeds them back (`Agent response: ...` from the `agents`);
    several are told apart by name."""

    def line(r: ToolResult) -> str:
        content = r.for_model()
        if r.name in agents:
            label = "Delegation failed" if r.is_error else "Agent response"
            content = content.removeprefix(f"{label}: ")
        else:
            label = "Tool execution failed" if r.is_error else "Tool result"
        return f"{label} ({r.name}): {content}" if len(results) > 1 else f"{label}: {content}"

    return "\n\n".join(line(r) for r in results)


class Gate:
    """Decides which of a reply's text reaches the client while the reply is still being generated."""

    def __init__(self, observer: TurnObserver) -> None:
        self.observer = observer

    def chunk(self) -> None:
        self.observer.chunk()

    def tool_call(self) -> None:
        self.observer.tool_call()

    def text(self, delta: str) -> None:
        raise NotImplementedError

    def finish(self, *, called_tools: bool) -> None:
        raise NotImplementedError


class Passthrough(Gate):
    """Final-answer calls (tools off): every token is the answer."""

    def text(self, delta: str) -> None:
        self.observer.text(delta)

    def finish(self, *, called_tools: bool) -> None:
        pass


class Muted(Gate):
    """JSON phase 1: replies are actions, and the answer comes in phase 2; nothing is shown."""

    def text(self, delta: str) -> None:
        pass

    def finish(self, *, called_tools: bool) -> None:
        pass


class BeforeFence(Gate):
    """Fenced replies: text before the first ``` is shown at once; the rest once the reply proves to call no tool."""

    def __init__(self, observer: TurnObserver) -> None:
        super().__init__(observer)
        self._text = ""
        self._shown = 0

    def text(self, delta: str) -> None:
        self._text += delta
        self._show(fenced.shown_part(self._text))

    def finish(self, *, called_tools: bool) -> None:
        if called_tools:
            self.observer.tool_call()
        else:
            self._show(self._text)

    def _show(self, visible: str) -> None:
        if len(visible) > self._shown:
            self.observer.text(visible[self._shown :])
            self._shown = len(visible)


def json_protocol(inner: StreamingModelProvider) -> TextProtocol:
    return TextProtocol(inner, json_system_prompt, json_actions.read, Muted, two_phase=True)


def fenced_protocol(inner: StreamingModelProvider) -> TextProtocol:
    return TextProtocol(inner, fenced_system_prompt, fenced.read, BeforeFence)
