"""Typed output: an agent's answer, when it declares `[output]`, is a JSON value valid against its schema.

The answer is validated here, in the workflow (`contracts/output_schema.py`: pure, deterministic, no activity round
trip). One that does not validate goes back to the model with the errors, as a tool failure does, up to
`[output] retries` times; then the turn ends `error`, naming what did not validate and keeping the last answer.
A turn a budget stops first keeps its last answer too, and its error says what in it did not validate (`why_no_output`).
Only agents with `[output]` come here, so runs recorded before typed output replay as they ran.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import Message
    from stalwart.contracts.output_schema import answer_value, validation_errors
    from stalwart.contracts.run import StopReason
    from stalwart.contracts.run_input import ChainState, TurnInProgress
    from stalwart.workflows.chain import Chain
    from stalwart.workflows.turns import Turn

RETRY_PROMPT = (
    "Your answer is not the output asked for: {problems}\n"
    "Answer again with only a JSON value that matches the output schema, nothing before or after it."
)


def problems_of(agent: AgentSpec, text: str) -> tuple[Any, list[str]]:
    """The answer's JSON value and what is wrong with it (nothing, when it validates against `[output]`)."""
    assert agent.output is not None and agent.output.schema_ is not None
    limit = agent.session.max_message_chars
    if len(text) > limit:
        return None, [
            f"the answer has {len(text):,} characters, over the {limit:,} an answer may take "
            "([session] max_message_chars); give a shorter one"
        ]
    value, unreadable = answer_value(text)
    if unreadable is not None:
        return None, [unreadable]
    return value, validation_errors(value, agent.output.schema_)


def settle_output(agent: AgentSpec, chain: Chain, turn: Turn, text: str) -> tuple[StopReason | None, str | None]:
    """Take the model's answer `text` as the turn's output if it validates: `("done", None)`; else ask again
    (`(None, None)`: the turn goes on) or, with no retry left, `("error", why)`. The answer's text is kept either
    way (`answer`), the validated value in the chain's and the turn's `output`."""
    output, state, progress = agent.output, chain.state, turn.progress
    assert output is not None
    value, problems = problems_of(agent, text)
    if not problems:
        state.answer, state.output, progress.output = text, value, value
        chain.steps[-1].final = True
        return "done", None
    listed = "\n".join(f"- {problem}" for problem in problems)
    # The step log says why the answer was refused, on the model's step: a user step would read as the person's.
    chain.steps[-1].error = f"the answer does not fit [output]:\n{listed}"
    if progress.output_retries < output.retries:
        progress.output_retries += 1
        state.answer = text  # the last answer, should a budget stop the turn before the next one (`why_no_output`)
        state.unsent.append(Message(role="user", content=RETRY_PROMPT.format(problems="\n" + listed)))
        return None, None
    state.answer = text
    chain.steps[-1].final = True
    tries = output.retries + 1
    # One model call (`max_steps = 1`, as a sub-agent in single mode makes) leaves no step for a retry.
    retry = "" if agent.budgets.max_steps == 1 else "raise [output] retries, "
    return "error", (
        f"the answer did not validate against the agent's [output] schema after {tries} "
        f"tr{'y' if tries == 1 else 'ies'}:\n{listed}\nThe last answer is kept in `answer`; {retry}"
        "loosen the schema, or say more in the instructions about the answer's shape."
    )


BUDGETS = ("max_steps", "max_tokens", "max_cost", "max_seconds")
FINALIZED = ("max_steps", "max_tokens", "max_cost")
"""The budgets after which `finalize_on_budget` asks the model for one last answer."""


def why_no_output(
    agent: AgentSpec, state: ChainState, progress: TurnInProgress, stop: StopReason, error: str | None
) -> str | None:
    """The error of a turn that ended on `stop`: `error`, and when a budget stopped it with no valid output but an
    answer in `answer` (one sent back for not validating, or the one `finalize_on_budget` asked for), what in that
    answer does not fit `[output]`. A turn stopped by a budget has no output, but the caller, and a parent agent
    reading a sub-agent's failure, should learn how near the answer came, not only that steps ran out."""
    output = agent.output
    if output is None or stop not in BUDGETS or state.output is not None or state.answer is None:
        return error
    # `finalize_on_budget`'s call answered (else `error` says why, `finalize.py`, and `answer` is the budget's own)
    finalized = agent.budgets.finalize_on_budget and stop in FINALIZED and error is None
    if not progress.output_retries and not finalized:
        return error  # `answer` holds no answer of the model's (`max_steps` puts its own words there)
    _, problems = problems_of(agent, state.answer)
    said = f"the turn stopped at its {stop} budget before an answer validated against the agent's [output] schema"
    if problems:
        listed = "\n".join(f"- {problem}" for problem in problems)
        said += f"; the last answer, kept in `answer`, does not fit it:\n{listed}"
    else:
        said += "; the last answer, kept in `answer`, fits it, but a turn a budget stopped gives no output"
    return said if error is None else f"{error}\n{said}"
