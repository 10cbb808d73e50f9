"""The testing kit for users: the example in docs/testing.md runs as a user's own pytest file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.repo_paths import REPO


def _example(name: str) -> str:
    text = (REPO / "docs" / "testing.md").read_text()
    after = text.split(f"<!-- example: {name} -->", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def _pytest_in(folder: Path, test_file: str, *, asyncio_mode: str) -> subprocess.CompletedProcess[str]:
    """pytest run on `test_file` as a user runs their own tests: in its folder, with its own storage there."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", f"asyncio_mode={asyncio_mode}"]
        + [test_file],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "STALWART_STORAGE": str(folder / "storage")},
        check=False,
    )


@pytest.mark.slow
def test_the_documented_example_test_passes_as_a_users_own_test_file(tmp_path):
    (tmp_path / "test_my_agent.py").write_text(_example("test_my_agent.py"))
    result = _pytest_in(tmp_path, "test_my_agent.py", asyncio_mode="auto")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


@pytest.mark.slow
def test_the_documented_recipe_for_a_users_own_workflow_records_and_replays_it(tmp_path):
    """export_run and `stalwart replay` refuse a workflow of the user's own that runs agents; docs/testing.md says to
    record it with the SDK and replay it with `Replayer(..., plugins=[StalwartPlugin()])`: that recipe, run as
    written, as the user's own test file."""
    (tmp_path / "my_workflow.py").write_text(_example("my_workflow.py"))
    (tmp_path / "test_my_workflow.py").write_text(_example("test_my_workflow.py"))
    result = _pytest_in(tmp_path, "test_my_workflow.py", asyncio_mode="auto")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


async def test_export_run_takes_the_environments_client_and_a_folder_named_as_text(tmp_path, monkeypatch):
    """docs/testing.md names it `export_run(client, run_id, folder)`: with `env.client` or a folder given as a
    string it failed with AttributeError ('StalwartClient' has no 'get_workflow_handle', 'str' has no 'mkdir')."""
    from stalwart import AgentSpec
    from stalwart.testing import export_run, replay_histories, reply, stalwart_test_environment

    monkeypatch.setenv("STALWART_STORAGE", str(tmp_path / "storage"))
    agent = AgentSpec(name="hello", scripted=[reply("Hi.")])
    async with stalwart_test_environment() as env:
        handle = await env.client.start(agent, "say hi")
        await handle.result()
        written = await export_run(env.client, handle.run_id, str(tmp_path / "histories"))
    assert [path.parent for path in written] == [tmp_path / "histories"]
    [outcome] = await replay_histories(str(tmp_path / "histories"))
    assert outcome.ok


@pytest.mark.slow
def test_the_stalwart_env_fixture_works_in_pytest_asyncios_default_strict_mode(tmp_path):
    """pytest-asyncio's default mode is strict: there the fixture, a plain pytest fixture of an async generator,
    failed every test that asked for it ('requested an async fixture ... with no plugin or hook that handled it')."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["stalwart.testing"]\n')
    (tmp_path / "test_strict.py").write_text(
        "import pytest\n"
        "from stalwart import AgentSpec\n"
        "from stalwart.testing import reply\n\n\n"
        "@pytest.mark.asyncio\n"
        "async def test_hello(stalwart_env):\n"
        '    agent = AgentSpec(name="hello", scripted=[reply("Hi.")])\n'
        '    assert (await stalwart_env.client.run(agent, "say hi")).answer == "Hi."\n'
    )
    result = _pytest_in(tmp_path, "test_strict.py", asyncio_mode="strict")
    assert result.returncode == 0, result.stdout + result.stderr
