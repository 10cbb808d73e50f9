"""The `stalwart` commands, one module per kind (client/cli.py parses the command line and loads only the one it runs).

What every command shares: its exit statuses, the error of a command line it cannot act on, and the names
a command line defaults to.
"""

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2

# The same as stalwart.contracts.names, which is not imported here (it loads the contracts and the
# Temporal SDK); tests/test_cli_sessions.py checks that they agree.
TASK_QUEUE = "stalwart"
WORKFLOW_TYPE = "AgentWorkflow"
DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


class UsageError(Exception):
    """A command line the command cannot act on (a message that is not text, say): one `error:` line, exit status 2."""
