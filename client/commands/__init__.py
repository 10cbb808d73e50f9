"""The `stalwart` commands, one module per kind (client/cli.py parses the command line and loads only the one it runs).

What every command shares: its exit statuses and the names a command line defaults to. A command line a command
cannot act on is a `stalwart.contracts.errors.UsageError`: one `error:` line, exit status 2.
"""

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2
"""Exit statuses: a `UsageError` exits 2, every other `StalwartError` 1 (client/cli.py, docs/errors.md)."""

# The same as stalwart.contracts.names, which is not imported here (it loads the contracts and the
# Temporal SDK); tests/test_cli_sessions.py checks that they agree.
TASK_QUEUE = "stalwart"
WORKFLOW_TYPE = "AgentWorkflow"
DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"
