"""A run that ended in error, as the Stalwart error its caller catches.

The SDK says only "Workflow execution failed"; the failure that names the cause is at the bottom of its chain.
"""

from __future__ import annotations

from temporalio.client import WorkflowFailureError

from stalwart.contracts.errors import RunFailed
from stalwart.workflows.failures import innermost_message


class RunEndedInError(RunFailed, WorkflowFailureError):
    """The run ended failed: its message is the failure at the bottom of the chain (`InvalidRunInput: ...`).

    Still a `WorkflowFailureError` whose `cause` is the SDK's, so code that caught the SDK's error keeps working:
    raise it `from failure.cause`, which `cause` reads."""

    def __init__(self, failure: WorkflowFailureError) -> None:
        WorkflowFailureError.__init__(self, cause=failure.cause)
        self.args = (f"the run failed: {innermost_message(failure)}",)
