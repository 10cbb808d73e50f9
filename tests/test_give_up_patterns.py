"""`[loop] give_up_patterns` run in linear time: a crafted answer cannot hold the workflow task (and with it every
run on the worker), and a pattern that needs backtracking is refused before a run starts."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError

from stalwart.client.agent_files import AgentFileError, load_agent
from stalwart.client.api import StalwartClient
from stalwart.client.cli import EXIT_USAGE, main
from stalwart.contracts.agent import AgentSpec, Budgets, LoopSettings, ScriptedReply
from stalwart.contracts.names import WORKFLOW_TYPE
from stalwart.contracts.patterns import LINEAR_FIX
from stalwart.contracts.run import AgentResult
from stalwart.workflows.conversation import gives_up

CATASTROPHIC = "(a+)+$"
"""Python's `re` takes about 2**n steps for it against n a's and a `!`: 26 of them took ~8 s in the bug bash."""

NEEDS_BACKTRACKING = {"lookahead": "(?=a)(a+)+$", "lookbehind": "(?<!not )sorry", "backreference": r"(\w+) \1"}


def test_a_give_up_pattern_that_backtracks_catastrophically_in_python_is_matched_in_linear_time():
    loop = LoopSettings(give_up_patterns=[CATASTROPHIC])
    assert not gives_up("a" * 5000 + "!", loop)
    assert gives_up("A" * 5000, loop)


def test_a_give_up_pattern_is_matched_case_insensitively():
    assert gives_up("I CANNOT DO THAT", LoopSettings(give_up_patterns=["cannot do"]))
    assert gives_up("I'M SORRY, I WASN'T ABLE TO FIND IT.", LoopSettings())


async def test_an_answer_against_a_catastrophic_give_up_pattern_does_not_hold_the_workflow_task(
    time_skipping_env, task_queue, worker_with
):
    """The bug bash's case: with Python's `re` the task failed at 2 s ("[TMPRL1101] Potential deadlock detected")
    on every attempt and the run never ended. The first answer gives up (all a's), the second does not."""
    gives_up_answer, answer = "a" * 5000, "a" * 5000 + "!"
    spec = AgentSpec(
        name="redos",
        tools=["echo"],
        scripted=[ScriptedReply(text=gives_up_answer), ScriptedReply(text=answer)],
        budgets=Budgets(max_steps=5),
        loop=LoopSettings(give_up_patterns=[CATASTROPHIC]),
    )
    async with worker_with():
        result = await (await StalwartClient(time_skipping_env.client, task_queue=task_queue).start(spec, "g")).result()
    assert (result.stop_reason, result.answer) == ("done", answer)
    assert [s.final for s in result.steps if s.role == "assistant"] == [False, True]


@pytest.fixture(params=sorted(NEEDS_BACKTRACKING))
def backtracking_file(request: pytest.FixtureRequest, tmp_path) -> tuple[object, str]:
    pattern = NEEDS_BACKTRACKING[request.param]
    path = tmp_path / "agent.toml"
    path.write_text(f"name = \"a\"\n[loop]\ngive_up_patterns = ['{pattern}']\n")
    return path, pattern


def test_check_refuses_a_give_up_pattern_that_needs_backtracking_and_says_how_to_fix_it(backtracking_file, capsys):
    path, pattern = backtracking_file
    assert main(["check", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"give_up_patterns: {pattern!r} cannot run on the linear-time regex engine" in err
    assert LINEAR_FIX in err
    assert "Traceback" not in err


def test_load_agent_refuses_a_give_up_pattern_that_needs_backtracking(backtracking_file):
    path, pattern = backtracking_file
    with pytest.raises(AgentFileError) as refused:
        load_agent(path)
    assert f"give_up_patterns: {pattern!r}" in str(refused.value) and LINEAR_FIX in str(refused.value)


def test_a_give_up_pattern_that_is_no_regex_is_refused_with_the_engines_reason():
    with pytest.raises(ValueError, match=r"give_up_patterns: '\(' is not a regular expression \(unclosed group\)"):
        LoopSettings(give_up_patterns=["("])


async def test_a_run_started_around_the_checks_with_a_lookaround_fails_at_once_saying_why(
    time_skipping_env, task_queue, worker_with
):
    """Another SDK's client sends the agent as JSON, past `stalwart check`: the run's input is refused, never
    matched with a backtracking engine."""
    agent = {"name": "redos", "tools": ["echo"], "loop": {"give_up_patterns": [NEEDS_BACKTRACKING["lookahead"]]}}
    async with worker_with():
        handle = await time_skipping_env.client.start_workflow(
            WORKFLOW_TYPE,
            {"agent": agent, "goal": "g"},
            id=f"redos-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert "invalid run input" in str(failed.value.cause) and LINEAR_FIX in str(failed.value.cause)
