"""A turn: one message's work (a plain run's goal is its one message), steps until an answer.

The turn's progress (`TurnInProgress`) is chain state: a turn cut by continue-as-new between two steps goes on in
the next run. Its budget is rebuilt from that progress by every run that goes on with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import Usage
    from stalwart.contracts.run import AgentResult, StepRecord, StopReason
    from stalwart.contracts.run_input import ChainState, TurnInProgress
    from stalwart.workflows import conversation, deadlines, patches
    from stalwart.workflows.budget import Budget


def begin(state: ChainState, agent: AgentSpec, first_record: int) -> TurnInProgress:
    """The chain's next turn, starting now; its records begin at `first_record` in the step log."""
    state.turns += 1
    state.answer = state.output = None  # each turn has its own: a turn continued as new keeps what it had
    now = workflow.now()
    max_seconds = agent.budgets.max_seconds
    return TurnInProgress(
        number=state.turns,
        first_record=first_record,
        started_at=now,
        # The earlier of its own budget and the deadline the chain inherited (a parent agent's, a user's workflow's).
        deadline=deadlines.earliest(
            None if max_seconds is None else now + timedelta(seconds=max_seconds), state.deadline
        ),
    )


@dataclass
class Turn:
    """The turn in progress and what it may still spend, passed down to each of its steps."""

    progress: TurnInProgress
    budget: Budget

    @classmethod
    def resumed(cls, progress: TurnInProgress, agent: AgentSpec, lifetime: Usage) -> Turn:
        """The turn with its budget: what it spent before (in earlier runs of the chain too) counts."""
        budget = Budget(
            agent=agent,
            started_at=progress.started_at,
            deadline=progress.deadline,
            steps_taken=progress.steps_taken,
            spent=progress.usage,
            lifetime=lifetime,
        )
        return cls(progress, budget)

    def hold_for_the_next_run(self) -> None:
        """Write what the budget has spent into the progress that continue-as-new carries."""
        self.progress.steps_taken, self.progress.usage = self.budget.steps_taken, self.budget.spent

    def nudged(self, agent: AgentSpec, has_tools: bool, answer: str) -> bool:
        """Whether an answer that gives up early is met with the persistence prompt instead of ending the turn.

        A premature giving-up ("I'm sorry, I wasn't able to find ..." while tools could find it): at most
        `[loop] persistence_nudges` times a turn, only with tools to use and a step left to use them.
        """
        loop = agent.loop
        if self.progress.nudges >= loop.persistence_nudges or not has_tools or self.budget.exhausted() is not None:
            return False
        if not conversation.gives_up(answer, loop) or not patches.active(patches.PERSISTENCE_NUDGE):
            return False  # `patched`: a run recorded before nudges existed replays as it ran
        self.progress.nudges += 1
        return True

    def result(self, stop: StopReason, answer: str, error: str | None, steps: list[StepRecord]) -> AgentResult:
        """What the turn gives the messages it answered; `steps` is the run's step log."""
        progress = self.progress
        elapsed = (workflow.now() - progress.started_at).total_seconds()
        own_steps = steps[progress.first_record :]
        return AgentResult(
            answer=answer,
            stop_reason=stop,
            steps=own_steps,
            usage=self.budget.spent,
            elapsed_seconds=elapsed,
            metrics=conversation.metrics(own_steps, elapsed_seconds=elapsed),
            error=error,
            output=progress.output,
            budget_fired_after_seconds=(
                (progress.deadline - progress.started_at).total_seconds()
                if stop == "max_seconds" and progress.deadline is not None
                else None
            ),
        )
