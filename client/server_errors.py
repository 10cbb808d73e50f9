"""What the Temporal server's refusals mean to the person who asked: each `RPCError` a command meets, as the
Stalwart error it is, told by its status and the failure detail the server attached (never by its wording)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from stalwart.contracts.errors import InfrastructureError, NotFound, StalwartError, UsageError

if TYPE_CHECKING:
    from temporalio.service import RPCError

_R = TypeVar("_R")


class RunNotFound(NotFound):
    """The namespace has no run or session of that id: `stalwart runs` lists them."""


class NamespaceNotFound(NotFound):
    """The server has no such namespace: check --namespace (or TEMPORAL_NAMESPACE)."""


class RequestRefused(UsageError):
    """The server refused the request as sent (INVALID_ARGUMENT: an id over its length limit, say): fix it and ask
    again; asking again as it is gets the same answer."""


class TemporalRefused(InfrastructureError):
    """The server answered a request with an error: busy, unavailable, or a query no worker answered in time."""


def explained(err: RPCError) -> StalwartError:
    """`err` as the error a person can act on: which branch, and what to do next."""
    from temporalio.api.errordetails.v1 import NamespaceNotFoundFailure
    from temporalio.service import RPCStatusCode

    said = err.message.rstrip(".")
    if err.status == RPCStatusCode.NOT_FOUND:
        if any(detail.Is(NamespaceNotFoundFailure.DESCRIPTOR) for detail in err.grpc_status.details):
            return NamespaceNotFound(
                f"{said}. check --namespace (or TEMPORAL_NAMESPACE): `temporal operator namespace list` lists them."
            )
        return RunNotFound(f"{said}. `stalwart runs` lists the runs of this namespace.")
    if err.status == RPCStatusCode.INVALID_ARGUMENT:
        return RequestRefused(f"Temporal refused the request as sent: {said}; fix it and ask again")
    # A query to a running workflow times out when no worker runs it.
    hint = (
        "; a running run or session answers through a worker: is one polling its task queue?"
        if err.status in (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED)
        else ""
    )
    return TemporalRefused(f"Temporal answered {err.status.name if err.status else 'an error'}: {err.message}{hint}")


def explaining(
    command: Callable[..., Coroutine[Any, Any, _R]],
) -> Callable[..., Coroutine[Any, Any, _R]]:
    """`command`, with the server's refusals it does not handle itself raised as Stalwart errors (`explained`)."""

    @functools.wraps(command)
    async def explaining_command(*args: Any, **kwargs: Any) -> _R:
        try:
            return await command(*args, **kwargs)
        except StalwartError:
            raise
        except Exception as err:
            # Loaded here, not at start: a command that reaches no server (`stalwart check`) never loads the SDK.
            from temporalio.service import RPCError

            if not isinstance(err, RPCError):
                raise
            raise explained(err) from err

    return explaining_command
