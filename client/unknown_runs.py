"""An unknown run id, as the Python API raises it: the `RunNotFound` its docs name, and still the SDK's error.

`RunReader` and `RunHandle` reach Temporal through its SDK, which refuses an id the namespace does not have with a
bare `RPCError` (NOT_FOUND). That is no `StalwartError`, though every error the API raises is one
(docs/errors.md): `except stalwart.NotFound` missed it, and only the command line said it as `RunNotFound`. Raised as
`UnknownRun`, it is both, so code that caught the SDK's error (`except RPCError`, `status == NOT_FOUND`) keeps
catching it, with the server's words in `.message`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from temporalio.service import RPCError, RPCStatusCode

from stalwart.client.server_errors import RunNotFound, explained

_C = TypeVar("_C", bound=type)


class UnknownRun(RunNotFound, RPCError):
    """No run or session of that id (or it is gone): `RunNotFound`, and the SDK's `RPCError` (NOT_FOUND) it was."""

    def __init__(self, err: RPCError, said: str) -> None:
        RPCError.__init__(self, err.message, err.status, err.raw_grpc_status)
        self.args = (said,)  # what to do next, as every StalwartError says it; `.message` stays the server's words


def _as_unknown_run(err: RPCError) -> UnknownRun | None:
    """`err` as `UnknownRun` when it says the run is unknown (and is not one yet); a namespace that is not there, or
    any other refusal, is None: raised as it came."""
    if err.status != RPCStatusCode.NOT_FOUND or isinstance(err, UnknownRun):
        return None
    named = explained(err)
    return UnknownRun(err, str(named)) if isinstance(named, RunNotFound) else None


def naming_unknown_runs(cls: _C) -> _C:
    """`cls`, its public coroutines and async generators raising an unknown run id as `UnknownRun`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if inspect.iscoroutinefunction(member):
            setattr(cls, name, _coroutine(member))
        elif inspect.isasyncgenfunction(member):
            setattr(cls, name, _generator(member))
    return cls


def _coroutine(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def naming(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except RPCError as err:
            if (named := _as_unknown_run(err)) is None:
                raise
            raise named from err

    return naming


def _generator(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(method)
    async def naming(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            async for item in method(*args, **kwargs):
                yield item
        except RPCError as err:
            if (named := _as_unknown_run(err)) is None:
                raise
            raise named from err

    return naming
