"""Providers that return whole turns (the scripted model, plug-ins) seen as streams.

Their text is replayed word by word, as the KAOS seed streams mock replies,
so a client follows a scripted run exactly as it follows a real model.
"""

from __future__ import annotations

import re
from typing import Literal

from stalwart.activities.providers.base import AnyModelProvider, ModelProvider, StreamingModelProvider
from stalwart.activities.streaming import TurnObserver
from stalwart.contracts.activities import ModelContext
from stalwart.contracts.messages import AssistantTurn

_WORDS = re.compile(r"\S+\s*|\s+")


class Replayed:
    """Wraps a whole-turn provider in the streaming interface."""

    streaming: Literal[True] = True

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner

    async def complete(self, context: ModelContext, observer: TurnObserver) -> AssistantTurn:
        turn = await self.inner.complete(context)
        if turn.tool_calls:
            observer.tool_call()
        for word in _WORDS.findall(turn.text):
            observer.text(word)
        return turn


def as_streaming(provider: AnyModelProvider) -> StreamingModelProvider:
    """The provider itself when it streams, else the provider behind a replay."""
    if getattr(provider, "streaming", False):
        return provider  # type: ignore[return-value]  # the `streaming` marker says which protocol it follows
    return Replayed(provider)  # type: ignore[arg-type]
