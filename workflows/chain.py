"""The chain: the runs linked by continue-as-new, read as one run.

A run holds its chain's state in one `ChainState` from its start (a fresh one, or the one the run before it
carried) and reads and writes it there; continue-as-new carries that object whole, so nothing the model or the
user saw changes between runs. This run's own step log is not carried: before continuing, it goes to storage
and the chain names its archives.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts import names
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import Message, TranscriptRef, Usage
    from stalwart.contracts.run import AgentResult, ArchiveStepsRequest, StepArchive, StepRecord, StopReason
    from stalwart.contracts.run_input import ChainState, ContinuedRunInput, QueuedMessage
    from stalwart.workflows import conversation, local_activities, patches, policies


class ContinueAsNew(Exception):
    """History is long: continue as new at this safe point, carrying the turn in progress."""


class Chain:
    """This run's chain state (`state`, what continue-as-new carries) and this run's step log (`steps`)."""

    def __init__(self, input: ContinuedRunInput, now: datetime) -> None:
        self.continued = input.carried is not None
        """Whether an earlier run of the chain continued as new into this one."""
        self.steps: list[StepRecord] = []  # earlier runs' steps are archived, named by `state.archives`
        self.session = input.session
        self.by_update: dict[int, str] = {}
        """Messages of the conversation that came by a `send` update of this run, by position, with the update's id:
        a model call's input names the update instead of repeating the text (`ModelRequest.sent`)."""
        self.positions: dict[int, int] = {}
        """Steps of `steps` whose text is a message of the conversation, by index, with that message's position: the
        step archive reads those texts from the stored conversation (`ArchiveStepsRequest.from_transcript`)."""
        if input.carried is not None:
            self.state = input.carried
            return
        chain_id = workflow.info().run_id
        self.state = ChainState(
            chain_id=chain_id,
            runs=0,
            started_at=now,
            step=0,
            usage=Usage(),
            transcript=TranscriptRef(chain_id=chain_id),
            deadline=input.deadline,
        )
        if not input.session:
            self.record_user_message(input.goal, now)
        elif input.goal:  # a session's goal is its first message
            self.state.queued.append(QueuedMessage(id="goal", text=input.goal, received_at=now))

    def record_user_message(self, text: str, now: datetime, update_id: str | None = None) -> None:
        """Record a message for the model and the step log; `update_id`: the `send` update of this run it came by."""
        position = self.next_position()
        if update_id is not None:
            self.by_update[position] = update_id
        self.positions[len(self.steps)] = position
        self.state.unsent.append(Message(role="user", content=text))
        self.steps.append(StepRecord(step=self.state.step, role="user", content=text, started_at=now, ended_at=now))

    def next_position(self) -> int:
        """Where the next message recorded for the model goes in the conversation: after the stored ones and the
        unsent ones (a model call that stores appends its request's messages, then its reply)."""
        return self.state.transcript.messages + len(self.state.unsent)

    def by_reference(self, messages: list[Message]) -> tuple[list[Message], dict[int, str]]:
        """`messages` (the unsent ones) as a model call's input names them: those that came by a `send` update of
        this run without their text, and which update each came by, by index."""
        start = self.state.transcript.messages
        self.by_update = {position: id for position, id in self.by_update.items() if position >= start}
        sent = {
            index: self.by_update[start + index] for index in range(len(messages)) if start + index in self.by_update
        }
        if not sent:
            return messages, {}
        named = [
            message.model_copy(update={"content": ""}) if index in sent else message
            for index, message in enumerate(messages)
        ]
        return named, sent

    def close_open_steps(self, why: str) -> None:
        now = workflow.now()
        for record in self.steps:
            if record.ended_at is None:
                record.ended_at = now
                record.error = why

    def due(self, agent: AgentSpec) -> bool:
        """Whether history is long enough to continue as new (`[session] continue_as_new_events`, or the server's
        suggestion)."""
        info = workflow.info()
        limit = agent.session.continue_as_new_events
        if limit is not None:
            return info.get_current_history_length() >= limit
        return info.is_continue_as_new_suggested()

    @staticmethod
    def outdated() -> bool:
        """A newer worker deployment version has become current since this run started (worker versioning):
        a session at rest continues as new onto it instead of keeping its pinned old version for weeks."""
        return workflow.info().is_target_worker_deployment_version_changed()

    async def archive_steps(self, why: str = "before continuing as new") -> None:
        """Keep this run's steps in storage; the next run (or the result) names the archives instead of holding them.

        At the end of a run this keeps a large step log out of the result, which would repeat in history
        every tool result already recorded there; `RunHandle.result()` joins the archives back.
        """
        if not self.steps:
            return
        state = self.state
        steps = [step.archived() for step in self.steps]  # stored results are not sent again
        stored: dict[int, int] = {}
        local = patches.active(patches.STEP_ARCHIVE_AS_LOCAL_ACTIVITY)
        if local:
            # A local activity: its input is not recorded in history, and without the texts the stored conversation
            # holds (read from there) it stays under the external-storage threshold, which would store them again.
            # Runs recorded before sent every text through a full activity's input.
            stored = {
                index: position
                for index, position in self.positions.items()
                if position < state.transcript.messages and steps[index].content
            }
        for index in stored:
            steps[index] = steps[index].model_copy(update={"content": ""})
        request = ArchiveStepsRequest(
            chain_id=state.chain_id,
            index=len(state.archives),
            steps=steps,
            transcript=state.transcript if stored else None,
            from_transcript=stored,
        )
        execute: Callable[..., Awaitable[StepArchive]] = (
            functools.partial(local_activities.execute, needed_for=f"the archive of this run's steps ({why})")
            if local
            else workflow.execute_activity
        )
        archive = await execute(
            names.ARCHIVE_STEPS_ACTIVITY,
            request,
            result_type=StepArchive,
            start_to_close_timeout=policies.ARCHIVE_TIMEOUT,
            retry_policy=policies.ARCHIVE_RETRY,
            summary=f"archive {len(self.steps)} steps {why}",
        )
        state.archives.append(archive)
        state.metrics = conversation.metrics(self.steps, state.metrics)
        self.steps = []
        self.positions = {}
        if state.turn is not None:
            state.turn.first_record = 0

    def result(self, stop: StopReason, error: str | None, budget_fired_at: datetime | None) -> AgentResult:
        """The chain's result: its answer, this run's steps (earlier runs' in `earlier`) and the whole chain's usage.

        `budget_fired_at`: when the wall-clock budget fired, which is later than now only if no worker was running
        at the deadline."""
        state = self.state
        elapsed = (workflow.now() - state.started_at).total_seconds()
        return AgentResult(
            answer=state.answer or "",
            stop_reason=stop,
            steps=self.steps,
            usage=state.usage,
            elapsed_seconds=elapsed,
            metrics=conversation.metrics(self.steps, state.metrics, elapsed),
            error=error,
            earlier=state.archives,
            turns=state.turns,
            runs=state.runs + 1,
            output=state.output,
            budget_fired_after_seconds=(
                (budget_fired_at - state.started_at).total_seconds()
                if stop == "max_seconds" and budget_fired_at is not None
                else None
            ),
        )

    def carried(self) -> ChainState:
        """The state the next run starts from: the whole of `state`, counting this run, with the newest tool results
        the thrash guard keeps."""
        state = self.state
        assert state.tools is not None, "tools are described before any turn, so before any continue-as-new"
        fields: dict[str, Any] = dict(state)
        fields.update(runs=state.runs + 1, earlier_results=conversation.latest_results(state.earlier_results))
        return ChainState(**fields)
