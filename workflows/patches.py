"""Every `workflow.patched` id of the agent workflow, and the one place that asks for them.

A patch lets a behaviour change reach runs in flight: a run recorded before the change replays its old branch
(no marker in its history), a run started since takes the new one and records the marker. docs/patches.md lists
each id with the release it came in, the release that makes it `deprecate_patch` and the release that deletes
it; tests/test_patch_policy.py holds this module and that table to each other.

`workflow.patched` records its marker the first time it is asked, at that point of the history: where and when
each call site asks is part of the recorded command order, so keep each `active(...)` call where it is (often
last in an `and` chain, so that runs which never reach the new branch gain no marker).
"""

from __future__ import annotations

from temporalio import workflow

UNKNOWN_TOOL_NAMES_END_THE_RUN = "unknown-tool-names-end-the-run"
"""A name in `require_approval` or `[bindings]` that no tool has ends the run before any tool runs."""
ARCHIVE_LARGE_STEP_LOG = "archive-large-step-log"
"""A large step log goes to storage at the run's end instead of into the result."""
MESSAGES_SIGNALLED_WHILE_CLOSING_ARE_ANSWERED = "messages-signalled-while-closing-are-answered"
"""A message signalled after `close`, while the session still answers, is answered instead of dropped."""
SESSION_LISTED_WAITING_WHILE_OPEN = "session-listed-waiting-while-open"
"""An open session is listed `waiting` throughout, not `running` and `waiting` at every turn."""
SESSION_RUNNING_AT_TURN_START = "session-running-at-turn-start"
"""A session's current details say `running` from the message on, not from the turn's first model call."""
PERSISTENCE_NUDGE = "persistence-nudge"
"""An answer that gives up early is met with `[loop] persistence_prompt`."""
MESSAGES_WAIT_OUT_A_SPENT_TURN = "messages-wait-out-a-spent-turn"
"""Messages that arrive during a turn that has spent its budget wait for the next turn."""
SEARCH_ATTRIBUTE_COUNTERS_THROTTLED = "search-attribute-counters-throttled"
"""The step, token and cost counters are upserted at most every `policies.COUNTERS_EVERY`, not every step."""
FAST_TOOLS_RUN_AS_LOCAL_ACTIVITIES = "fast-tools-run-as-local-activities"
"""A tool marked fast (`ToolSpec.fast`, the calculator) runs as a local activity, not a full activity."""
SEND_RESULT_WITHOUT_ECHOES = "send-result-without-echoes"
"""A session's `send` returns its turn's result without the message and the answer in `steps` (`SendResult`)."""
SENT_MESSAGES_BY_REFERENCE = "sent-messages-by-reference"
"""A model call's input names a message that came by `send` (its update in history) instead of repeating its text."""
SESSION_ANSWERS_STORED_BY_THEIR_CALL = "session-answers-stored-by-their-call"
"""A session's model call stores a reply without tool calls itself, instead of the next turn's call carrying it."""
STEP_ARCHIVE_AS_LOCAL_ACTIVITY = "step-archive-as-local-activity"
"""The step archive is a local activity, its input without the texts the stored conversation holds (read there)."""
SEND_RESULT_WITHOUT_METRICS = "send-result-without-metrics"
"""A session's `send` returns its turn's result in shape 3: also without `metrics`, which its steps say."""
BUDGET_NAMES_RETRIED_FAILURES = "budget-names-retried-failures"
"""A turn cut by its wall-clock timer asks (an activity) how the calls it cuts had failed, and its error says."""
BUDGET_CUT_OUTRANKS_LATER_FAILURES = "budget-cut-outranks-later-failures"
"""Work that fails for good after the turn's timer fired, while the run asks `retried_calls`, is cut all the same."""
LOCAL_ACTIVITY_FAILURES_AS_ACTIVITY_ERRORS = "local-activity-failures-as-activity-errors"
"""A local activity's failure for good, which the SDK raises unwrapped, is read in an `ActivityError` (a fast tool's
error goes to the model, its refusal past the deadline cuts the turn) instead of failing the run."""

UNKNOWN_INPUT_FIELDS_REFUSED = "unknown-input-fields-refused"
"""A run's input that names a field the run does not take (`sesion`) fails the run, naming it, instead of running
without it."""


ALL = (
    UNKNOWN_TOOL_NAMES_END_THE_RUN,
    ARCHIVE_LARGE_STEP_LOG,
    MESSAGES_SIGNALLED_WHILE_CLOSING_ARE_ANSWERED,
    SESSION_LISTED_WAITING_WHILE_OPEN,
    SESSION_RUNNING_AT_TURN_START,
    PERSISTENCE_NUDGE,
    MESSAGES_WAIT_OUT_A_SPENT_TURN,
    SEARCH_ATTRIBUTE_COUNTERS_THROTTLED,
    FAST_TOOLS_RUN_AS_LOCAL_ACTIVITIES,
    SEND_RESULT_WITHOUT_ECHOES,
    SENT_MESSAGES_BY_REFERENCE,
    SESSION_ANSWERS_STORED_BY_THEIR_CALL,
    STEP_ARCHIVE_AS_LOCAL_ACTIVITY,
    SEND_RESULT_WITHOUT_METRICS,
    BUDGET_NAMES_RETRIED_FAILURES,
    BUDGET_CUT_OUTRANKS_LATER_FAILURES,
    LOCAL_ACTIVITY_FAILURES_AS_ACTIVITY_ERRORS,
    UNKNOWN_INPUT_FIELDS_REFUSED,
)
"""Every id in use, in the order of the table in docs/patches.md."""


def active(patch_id: str) -> bool:
    """Whether this run takes the patched branch: always for a new run, never for one recorded before the patch.

    The only call of `workflow.patched` in the workflow code, so that every id goes through `ALL`."""
    return workflow.patched(patch_id)
