"""The failure types Stalwart writes into histories, in one place.

Each is the `type` of an `ApplicationError` a workflow or an activity raises, so each is recorded in the histories
of the runs that met it, is named in retry policies' `non_retryable_error_types`, and is what a client in any
language matches a failure by. A recorded history replays only while these strings stay byte for byte the same:
never change a value, add a new one instead.

Some are the names of the exception classes that raise them (`type(err).__name__`): tests/test_errors.py holds
those classes' names to these values.
"""

from __future__ import annotations

# -- refused by the workflow -------------------------------------------------------------------------------------

INVALID_RUN_INPUT = "InvalidRunInput"
"""A run whose input the workflow refuses (no goal, an agent spec it cannot read): the run fails at once."""
INVALID_ARGUMENT = "InvalidArgument"
"""A signal's or an update's argument the workflow refuses: not retryable, the same argument is refused again."""
MESSAGE_REFUSED = "MessageRefused"
"""A session's `send` refused (empty, too long, the session closing): the message was not taken."""
SESSION_CONTINUING = "SessionContinuing"
"""A `send` refused while a session continues as new: send it again (StalwartClient does)."""

# -- activities ----------------------------------------------------------------------------------------------------

BUDGET_OVER = "BudgetOver"
"""An activity that would have started after its run's wall-clock budget ended: it did nothing."""
LONG_RATE_LIMIT = "ModelRateLimited"
"""A model call the provider asked to repeat only after a long wait (Retry-After).

Its details are `[seconds to wait, provider]`; the workflow waits that long on a durable timer
if the run's budget allows (no worker slot is held meanwhile), and stops saying so if not.
"""
MODEL_CONFIG_ERROR = "ModelConfigError"
"""The model cannot be called as configured (no API key, an unknown provider): retrying cannot help."""
MODEL_REQUEST_ERROR = "ModelRequestError"
"""The provider refused the request for good (HTTP 4xx other than a rate limit): retrying cannot help."""
TRANSCRIPT_ERROR = "TranscriptError"
"""The steps a model call must read are not where this worker looks (its storage): retrying cannot help."""
UNKNOWN_TOOL = "UnknownToolError"
"""A tool no worker of the task queue registers: retrying cannot help."""
RETRYABLE_TOOL_ERROR = "RetryableToolError"
"""A tool failed in a way worth another attempt (an MCP server unreachable, a tool's own `RetryableToolError`)."""
ENCRYPTION_KEY_ERROR = "EncryptionKeyError"
"""A worker cannot open a payload: the run was sealed with a key this worker lacks (a workflow task failure)."""
MISSING_ENCRYPTION_KEY = "MissingEncryptionKey"
"""A worker cannot open a payload: the run's payloads are encrypted and this worker has no key at all."""
ACTIVITIES_MISSING = "StalwartActivitiesMissing"
"""A worker runs the agent workflow without Stalwart's activities, so it cannot run a fast tool or the step archive,
local activities only the worker running the workflow can run (a workflow task failure: the run waits for a worker
that registers them)."""

# -- A2A delegation (activities/a2a/errors.py: each is the name of the class that raises it) -----------------------

A2A_UNAVAILABLE = "A2AUnavailableError"
"""The remote agent may answer later (connection refused, timeout, HTTP 408, 429, 5xx): retried."""
A2A_PROTOCOL = "A2AProtocolError"
"""The remote agent's card or reply is not valid A2A, or a JSON-RPC error: not retried."""
A2A_REQUEST = "A2ARequestError"
"""The remote agent refused the request for good (HTTP 4xx), or there is no agent card at the URL: not retried."""
A2A_TASK = "A2ATaskError"
"""The remote task ended without an answer (failed, rejected, canceled, needs authentication): not retried."""
