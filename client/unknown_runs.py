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

    def __init__(self, err: RPCError) -> None:
        RPCError.__init__(self, err.message, err.status, err.raw_grpc_status)
        # What to do next, as every StalwartError says it; `.message` stays the server's words.
        self.args = (str(explained(err)),)


def _unknown_run(err: RPCError) -> bool:
    """Whether `err` says the run is unknown (not yet named so); a namespace that is not there is another thing."""
    return (
        err.status == RPCStatusCode.NOT_FOUND
        and not isinstance(err, UnknownRun)
        and isinstance(explained(err), RunNotFound)
    )


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
            if not _unknown_run(err):
                raise
            raise UnknownRun(err) from err

    return naming


def _generator(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(method)
    async def naming(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            async for item in method(*args, **kwargs):
                yield item
        except RPCError as err:
            if not _unknown_run(err):
                raise
            raise UnknownRun(err) from err

    return naming
