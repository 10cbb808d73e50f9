"""What can go wrong between a worker and an MCP server, split by what the user should do about it."""

from __future__ import annotations

from stalwart.activities.tools.registry import RetryableToolError
from stalwart.contracts.errors import InfrastructureError, UsageError


class McpConfigError(UsageError):
    """The agent's MCP settings cannot work as written: retrying will not help, the agent file or worker must change."""

    hint = "This tool cannot work on this worker as configured; carry on without it and tell the user."


class McpUnavailable(RetryableToolError):
    """The server could not be reached just now; Temporal retries the activity with backoff."""


class McpHandshakeTimeout(McpUnavailable):
    """The server did not finish the MCP handshake within its `handshake_seconds`.

    Tried once more (a server that was slow the first time, such as `npx` fetching it, may be quick the
    second), then final: the call fails naming the server, what was started or reached, and the fix.
    """

    MAX_ATTEMPTS = 2


class McpToolError(InfrastructureError):
    """The server answered the call with an error (`isError` or a protocol error): feedback for the model."""

    hint = "Read the error, then fix the arguments or try another approach."


class McpServerExited(InfrastructureError):
    """The server went away while a call was in flight; it is started again on the next call.

    A read-only tool is then called once more; any other is not, as it may
    have had its effect (and a call that crashes its server would again).
    """

    hint = "The server is restarted on the next call; call the tool again only if running it twice is safe."
