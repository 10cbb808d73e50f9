"""The run's queries, signals and updates by name, in the metadata the Temporal Web UI and `temporal workflow
metadata` read (the SDK's `__temporal_workflow_metadata` query).

The run's handlers are dynamic (workflows/agent.py): the SDK decodes a named handler's arguments by its signature
before the handler runs, and one argument too many failed every workflow task of a session; a named query handler
would answer a bad argument with the SDK's bare "Failed decoding arguments". But the SDK lists a dynamic handler
without a name, so the UI offered one unnamed query instead of `state`, `pending_approvals` and `events`. The run
wraps the SDK's metadata query: what the SDK says is kept (its own queries, the run's current details), and each
unnamed entry becomes the routes of its dynamic handler, by name. A query adds nothing to history: runs recorded
before replay alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from temporalio import workflow
from temporalio.api.sdk.v1 import WorkflowInteractionDefinition, WorkflowMetadata

METADATA_QUERY = "__temporal_workflow_metadata"

QUERIES: Mapping[str, str] = {
    "state": "The run's live step log, status, usage and notes, across continue-as-new.",
    "pending_approvals": "The tool calls waiting for a person's decision, with their arguments.",
    "events": "The run so far as memory events, then the notes of what it could not use.",
}
SIGNALS: Mapping[str, str] = {
    "message": 'A message for the run, one JSON string ("hello"); the model reads it at its next step.',
    "close": "Close the session once its turn ends.",
}
UPDATES: Mapping[str, str] = {
    "send": 'A message for the session, one JSON string ("hello"); answers the result of the turn that reads it.',
    "approve": 'Let a waiting tool call run: {"call_id": "...", "reviewer": "..." (optional)}.',
    "reject": 'Refuse a waiting tool call: {"call_id": "...", "reason": "..." (optional)}; the model reads why.',
    "close": "Close the session once its turn ends; answers at once.",
}
"""Each route of the dynamic handlers and what it does, as the UI shows it; `arguments.QUERIES`, `SIGNALS` and
`UPDATES`, which route them, are these names."""


def name_the_routes() -> None:
    """Make the metadata query list the dynamic handlers' routes by name; called once, in the run's `__init__`.

    The SDK's answer is built by its internals: one of another shape (a later SDK's) is answered as it is, the
    dynamic handlers unnamed, and logged, rather than failing the query the UI and `temporal workflow metadata` ask.
    """
    listed_by_the_sdk = workflow.get_query_handler(METADATA_QUERY)
    if listed_by_the_sdk is None:  # an SDK without the metadata query: nothing to name
        return
    sdk_metadata: Callable[[], WorkflowMetadata] = listed_by_the_sdk

    def metadata() -> WorkflowMetadata:
        listed = sdk_metadata()
        try:
            return named(listed)
        except Exception as err:
            workflow.logger.warning(
                "the SDK's %s answered in a shape this version does not know (%s: %s): it is answered as it is, "
                "with the run's dynamic handlers unnamed (the run itself is unaffected; only the UI's list lacks their "
                "names): report it to stalwart with this temporalio version",
                METADATA_QUERY,
                type(err).__name__,
                err,
            )
            return listed

    workflow.set_query_handler(METADATA_QUERY, metadata)


def named(metadata: WorkflowMetadata) -> WorkflowMetadata:
    """`metadata` with each unnamed (dynamic) entry replaced by that handler's routes, each list sorted by name."""
    answer = WorkflowMetadata()
    answer.CopyFrom(metadata)
    definition = answer.definition
    for listed, routes in (
        (definition.query_definitions, QUERIES),
        (definition.signal_definitions, SIGNALS),
        (definition.update_definitions, UPDATES),
    ):
        entries = [WorkflowInteractionDefinition(name=d.name, description=d.description) for d in listed if d.name]
        if len(entries) < len(listed):  # the dynamic handler is there: list its routes instead
            known = {entry.name for entry in entries}
            entries += [
                WorkflowInteractionDefinition(name=name, description=said)
                for name, said in routes.items()
                if name not in known
            ]
        del listed[:]
        listed.extend(sorted(entries, key=lambda entry: entry.name))
    return answer
