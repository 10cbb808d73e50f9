"""Names that a client in any language needs to start and find runs."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

from stalwart.contracts import failure_types

WORKFLOW_TYPE = "AgentWorkflow"
TASK_QUEUE = "stalwart"

# Activity types, shared by the workflow that schedules them and the worker that runs them.
MODEL_ACTIVITY = "model_turn"
ARCHIVE_STEPS_ACTIVITY = "archive_steps"
"""Activity: `ArchiveStepsRequest` -> `StepArchive`; the step log of a run that continues as new."""
DESCRIBE_TOOLS_ACTIVITY = "describe_tools"
RUN_TOOL_ACTIVITY = "run_tool"
AGENT_RESULT_ACTIVITY = "agent_result"
"""Activity: a run's workflow id -> its `AgentResult`; how a user's workflow awaits an agent run it did not start
(`stalwart.workflow.get_agent`, after continuing as new)."""
AGENT_SEND_ACTIVITY = "agent_send"
"""Activity: (session id, message, update id) -> the turn's `AgentResult`; a workflow cannot send an update."""
RETRIED_CALLS_ACTIVITY = "retried_calls"
"""Activity: () -> one sentence for each call of the calling run that failed an attempt, naming its last
failure; the run's error says why its calls kept failing when its wall-clock budget cuts them."""
DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"

AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
AGENT_STATUS = SearchAttributeKey.for_keyword("AgentStatus")
AGENT_STEPS = SearchAttributeKey.for_int("AgentSteps")
AGENT_TOKENS = SearchAttributeKey.for_int("AgentTokens")
AGENT_COST_USD = SearchAttributeKey.for_float("AgentCostUsd")
AGENT_AWAITING_APPROVAL = SearchAttributeKey.for_bool("AgentAwaitingApproval")

SEARCH_ATTRIBUTES = (AGENT_NAME, AGENT_STATUS, AGENT_STEPS, AGENT_TOKENS, AGENT_COST_USD, AGENT_AWAITING_APPROVAL)

SESSION_CONTINUING = failure_types.SESSION_CONTINUING
"""Error type of a `send` refused while a session continues as new: send it again (StalwartClient does).

Every failure type a client may meet is in `stalwart.contracts.failure_types`."""
