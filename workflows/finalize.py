"""`finalize_on_budget`: when a budget stops a turn, one last model call without tools, for an answer.

That call's reply is the turn's answer only when it is one: text, not cut off by the output-token limit, with no
tool calls. Otherwise (the call failed, its reply was cut off, empty, or asked for tools) the turn ends as it would
without the call: with the budget's stop reason and its usual answer (`Reached maximum reasoning steps (N)` for
`max_steps`); the call's step stays in the log saying what happened, and the run's error says it too. Never for
`max_seconds`: no time is left for a call, and a turn whose model failed every attempt until the deadline
(`ModelFailed`) has no provider to ask.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.agent import AgentSpec
    from stalwart.contracts.messages import Message
    from stalwart.contracts.run import StopReason
    from stalwart.workflows import conversation
    from stalwart.workflows.chain import Chain
    from stalwart.workflows.model_step import ModelFailed, ModelStep, not_run
    from stalwart.workflows.turns import Turn
    from stalwart.workflows.typed_output import FINALIZED


async def stop_on_budget(
    agent: AgentSpec, chain: Chain, model: ModelStep, turn: Turn, reason: StopReason
) -> str | None:
    """Stop the turn the budget `reason` spent, after the last call for an answer when the agent asks for it;
    with the budget's own answer when there is none. Returns the turn's error: why that call gave no answer."""
    state = chain.state
    why = (
        await last_answer(agent, chain, model, turn, reason)
        if agent.budgets.finalize_on_budget and reason in FINALIZED
        else None
    )
    if reason == "max_steps" and state.answer is None:  # typed output keeps the last answer it refused
        state.answer = conversation.MAX_STEPS_ANSWER.format(n=agent.budgets.max_steps)
    return why


async def last_answer(agent: AgentSpec, chain: Chain, model: ModelStep, turn: Turn, reason: StopReason) -> str | None:
    """Ask for the answer without tools; on an answer it is the turn's (`answer`, its step `final`) and this
    returns None, else why the call gave none (for the run's error), its step saying so too."""
    state = chain.state
    budget = reason.removeprefix("max_")
    state.unsent.append(Message(role="user", content=conversation.FINALIZE_PROMPT.format(budget=budget)))
    try:
        reply = await model.ask(turn, tools_enabled=False)
    except ModelFailed as failed:  # the budget stopped the turn, not the failure: its step has the error
        return _no_answer(reason, f"did not answer: {failed}")
    step = chain.steps[-1]
    not_run(state, reply, f"the {reason} budget is spent")
    if reply.truncated:  # the cut-off text stays in the step, whose stop reason says why; its calls are not run
        limit = agent.max_output_tokens
        return _no_answer(
            reason,
            f"at step {step.step} was cut off by its output-token limit (stop reason {reply.stop_reason!r}; "
            f"max_output_tokens = {limit if limit else 'the provider default'}); raise `max_output_tokens` "
            "in the agent file, or ask for a shorter answer",
        )
    if reply.tool_calls:  # text beside them says what the model meant to do next, not its answer
        names = ", ".join(sorted({call.name for call in reply.tool_calls}))
        step.error = (
            f"the last call for an answer (finalize_on_budget) asked for tools ({names}) instead of answering; "
            f"they were not run, as the {reason} budget is spent"
        )
        return _no_answer(reason, f"at step {step.step} asked for tools ({names}) instead of answering")
    if not reply.text.strip():
        step.error = "the last call for an answer (finalize_on_budget) replied with no text"
        return _no_answer(reason, f"at step {step.step} replied with no text")
    state.answer = reply.text
    step.final = True
    return None


def _no_answer(reason: StopReason, what: str) -> str:
    return f"the turn stopped at its {reason} budget; the last call for an answer (finalize_on_budget) {what}"
