"""The README's two commands are the project's contract with a new user."""

from __future__ import annotations

from support.repo_paths import REPO


def test_ci_runs_exactly_the_readme_test_command():
    ci_command = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command in (REPO / "README.md").read_text().splitlines()


def test_the_readme_main_command_names_an_agent_file_that_exists():
    main = next(line for line in (REPO / "README.md").read_text().splitlines() if "stalwart run --dev" in line)
    agent = next(word for word in main.split() if word.endswith(".toml"))
    assert (REPO / agent).exists()
