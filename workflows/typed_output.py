"""Typed output: an agent's answer, when it declares `[output]`, is a JSON value valid against its schema.

The answer is validated here, in the workflow (`contracts/output_schema.py`: pure, deterministic, no activity round
trip). One that does not validate goes back to the model with the errors, as a tool failure does, up to
`[output] retries` times; then the turn ends `error`, naming what did not validate and keeping the last answer.
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


def settle(agent: AgentSpec, chain: Chain, turn: Turn, text: str) -> tuple[StopReason | None, str | None]:
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
        state.unsent.append(Message(role="user", content=RETRY_PROMPT.format(problems="\n" + listed)))
        return None, None
    state.answer = text
    chain.steps[-1].final = True
    tries = output.retries + 1
    return "error", (
        f"the answer did not validate against the agent's [output] schema after {tries} "
        f"tr{'y' if tries == 1 else 'ies'}:\n{listed}\nThe last answer is kept in `answer`; raise [output] retries, "
        "loosen the schema, or say more in the instructions about the answer's shape."
    )
