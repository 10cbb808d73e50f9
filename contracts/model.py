"""The base of every data contract: a pydantic model whose validator and serializer are built on first use."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Contract(BaseModel):
    """A data contract, built when a process first validates or writes one, not when it imports it.

    Building all forty-odd contracts at import was most of the start of `stalwart show` beyond the Temporal
    client (about 45 ms of 0.36 s), and a command reads a handful of them. pydantic 2.14 builds a deferred
    model under a lock, so activity threads meeting one for the first time at once are safe (pyproject.toml)."""

    model_config = ConfigDict(defer_build=True)


def build_contracts() -> None:
    """Build now every contract imported so far that is still deferred.

    For workflow code in the SDK's sandbox (a user's subclass of `AgentWorkflow`, sandboxed by default): a contract
    first met there is built against the sandbox's own module table, which lacks the contracts' modules, and fails
    as "not fully defined". Built outside, before any run, it is only used there."""
    pending: list[type[BaseModel]] = [Contract]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if not model.__pydantic_complete__:
            model.model_rebuild()
