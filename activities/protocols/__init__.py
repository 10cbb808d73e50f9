"""How tool calls travel: natively in the provider's wire format, or as text (`json`, `fenced`)."""

from __future__ import annotations

from stalwart.activities.protocols.text_protocol import TextProtocol, fenced_protocol, json_protocol
from stalwart.activities.providers.base import StreamingModelProvider
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.agent import ActionFormat


def wrap(provider: StreamingModelProvider, action_format: ActionFormat) -> StreamingModelProvider:
    """The provider speaking the agent's action format; `native` leaves it as it is."""
    if action_format == "json":
        return json_protocol(provider)
    if action_format == "fenced":
        return fenced_protocol(provider)
    return provider


def may_act(provider: StreamingModelProvider, context: ModelContext) -> bool:
    """Whether the reply to this call may be an action (a tool call) rather than the final answer."""
    if isinstance(provider, TextProtocol):
        return provider.acts(context)
    return context.tools_enabled and bool(context.tools)


__all__ = ["TextProtocol", "may_act", "wrap"]
