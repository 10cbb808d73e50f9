"""The README's two commands are the project's contract with a new user."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stalwart.workers.dev_server import free_port

from support.repo_paths import AGENTS_DIR, REPO


def _two_commands() -> dict[str, str]:
    """The one-line bash blocks of the README's "Two commands" section, keyed by the paragraph that introduces each."""
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index("## Two commands") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    commands: dict[str, str] = {}
    paragraph: list[str] = []  # the last paragraph of prose seen
    in_paragraph = False
    block: list[str] | None = None
    for line in lines[start:end]:
        if block is None and line == "```bash":
            block = []
        elif block is not None and line == "```":
            assert len(block) == 1, f"a command of the README's 'Two commands' is not one line: {block}"
            commands[" ".join(paragraph)] = block[0]
            block, paragraph = None, []
        elif block is not None:
            block.append(line)
        elif line:
            paragraph = [*paragraph, line] if in_paragraph else [line]
            in_paragraph = True
        else:
            in_paragraph = False
    return commands


def _readme_command(intro_start: str) -> str:
    [command] = [command for intro, command in _two_commands().items() if intro.startswith(intro_start)]
    return command


def test_ci_runs_exactly_the_readme_test_command():
    test_command = _readme_command("Install and run the tests")
    main_command = _readme_command("Run the example agent end to end")
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    ci_commands = [line for line in ci_lines if line and not line.startswith(("#", "set ", "cd "))]
    assert ci_commands == [test_command]
    assert test_command != main_command and "pytest" in test_command


def test_the_readme_main_command_names_an_agent_file_that_exists():
    main = _readme_command("Run the example agent end to end")
    assert "stalwart run --dev" in main
    agent = next(word for word in main.split() if word.endswith(".toml"))
    assert (REPO / agent).exists()


@pytest.mark.slow
def test_the_readme_main_command_runs_the_example_agent_to_its_answer(tmp_path):
    """The command after the install, as the README writes it, on a dev server of its own (its ports and data folder
    added, so it runs beside other tests) and without an API key, so the agent's scripted replies answer."""
    main = _readme_command("Run the example agent end to end")
    command = shlex.split(main.split(" && ")[-1])
    assert command[:3] == [".venv/bin/stalwart", "run", "--dev"], command
    isolated = ["--port", str(free_port()), "--ui-port", str(free_port()), "--data-dir", str(tmp_path / "dev")]
    env = {name: value for name, value in os.environ.items() if name not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["STALWART_STORAGE"] = str(tmp_path / "storage")
    done = subprocess.run(
        [str(Path(sys.executable).with_name("stalwart")), *command[1:3], *isolated, *command[3:]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stop reason: done" in done.stdout
    answer = tomllib.loads((AGENTS_DIR / "ops_assistant.toml").read_text())["scripted"][-1]["text"]
    assert answer[:60] in done.stdout


def test_readme_calculator_example_question_is_the_one_its_script_answers():
    """agents/calculator.toml runs on the scripted model: every question the README asks it must be the one
    its script computes (issue 11, defect 12: the README asked "What is 2**10?" and got 395)."""
    import ast
    import re
    import tomllib

    script = tomllib.loads((REPO / "agents" / "calculator.toml").read_text())["scripted"]
    computed = [call["arguments"]["expression"] for reply in script for call in reply.get("tool_calls", [])]
    answered = computed[-1]  # the last computation is the answer; earlier ones are its parts
    readme = (REPO / "README.md").read_text()
    asked = re.findall(r"""agents/calculator\.toml"?,? ["']?(What is [^"'?]+)\?""", readme)
    asked += re.findall(r"""calc-(?:chat|py)"?,? ["'](What is [^"'?]+)\?""", readme)
    asked += re.findall(r"""session\.send\(["'](What is [^"'?]+)\?""", readme)
    assert asked, "the README asks agents/calculator.toml no question any more: update this test"
    normal = "".join(answered.split())
    for question in asked:
        assert "".join(question.removeprefix("What is ").split()) == normal, (question, answered)
    from stalwart.activities.tools.builtin import _evaluate

    assert str(_evaluate(ast.parse(answered, mode="eval").body)) in script[-1]["text"]
