"""Lint and types are part of the suite, so `pytest` (and with it CI) fails on either."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.head_start import head_start
from support.repo_paths import REPO

BIN = Path(sys.executable).parent
PACKAGE_FOLDERS = ["contracts", "workflows", "activities", "workers", "client"]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def test_ruff_check_finds_nothing():
    result = _run([str(BIN / "ruff"), "check", "--no-cache", "."], REPO)
    assert result.returncode == 0, f"ruff check failed; run `ruff check --fix .`:\n{result.stdout}{result.stderr}"


def test_ruff_format_leaves_every_file_as_it_is():
    result = _run([str(BIN / "ruff"), "format", "--check", "--no-cache", "."], REPO)
    assert result.returncode == 0, f"some files are not formatted; run `ruff format .`:\n{result.stdout}"


@head_start
def _mypy() -> subprocess.CompletedProcess[str]:
    """mypy reads the package as it is installed: `stalwart/` with the layout's folders inside it.

    The folders are mapped into `stalwart` by setuptools' package-dir, which mypy cannot follow,
    so it checks a tree of links that mirrors the installed package.
    """
    with tempfile.TemporaryDirectory(prefix="stalwart-mypy-") as scratch:
        tree = Path(scratch)
        package = tree / "stalwart"
        package.mkdir()
        for entry in (REPO / "stalwart").iterdir():
            if entry.suffix in (".py", ".typed"):
                (package / entry.name).symlink_to(entry)
        for folder in PACKAGE_FOLDERS:
            (package / folder).symlink_to(REPO / folder, target_is_directory=True)
        command = [str(BIN / "mypy"), "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(tree / "cache")]
        return _run([*command, "-p", "stalwart"], tree)


@pytest.mark.slow
@pytest.mark.head_start(_mypy)
def test_mypy_finds_no_type_errors_strict_on_contracts_and_workflows(
    head_start_result: subprocess.CompletedProcess[str],
):
    """mypy takes half a minute of a core: it runs from the start of the session (support/head_start.py)."""
    result = head_start_result
    assert result.returncode == 0, (
        f"mypy found type errors (stalwart/X/... is the repo's X/...):\n{result.stdout}{result.stderr}"
    )
