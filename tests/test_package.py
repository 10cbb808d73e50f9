"""What installing Stalwart puts into a user's environment: one package, `stalwart`, with a small public API."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import stalwart

from support.head_start import head_start
from support.repo_paths import REPO

LAYOUT_FOLDERS = ["contracts", "workflows", "activities", "workers", "client"]


def _documented_public_names() -> list[str]:
    """The names in backticks of the README's "Public API" section."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Public API", 1)[1].split("\n#", 1)[0]
    return sorted(set(re.findall(r"^- `(\w+)`", section, flags=re.M)))


def test_the_exported_names_are_exactly_the_documented_ones():
    documented = _documented_public_names()
    assert documented, "the README's Public API section lists no names"
    assert sorted(n for n in stalwart.__all__ if n != "__version__") == documented


def test_every_exported_name_resolves():
    for name in stalwart.__all__:
        assert getattr(stalwart, name) is not None, name


def test_importing_stalwart_imports_no_provider_sdk_and_starts_nothing():
    probe = (
        "import sys, threading, stalwart;"
        "heavy = [m for m in ('openai', 'anthropic', 'mcp', 'httpx', 'temporalio.worker', 'temporalio.client')"
        " if m in sys.modules];"
        "print(heavy, threading.active_count())"
    )
    assert _in_a_fresh_interpreter(probe) == "[] 1"


def test_importing_the_packages_loads_no_contract_module():
    """A reader of runs (`stalwart show`) never builds the agent spec's contracts: `stalwart` and its subpackages
    import none of their modules, so each module is paid for only by code that imports it."""
    probe = (
        "import sys, stalwart, stalwart.contracts, stalwart.client, stalwart.client.commands;"
        "print(sorted(m for m in sys.modules if m.startswith(('stalwart.contracts.', 'temporalio.client'))))"
    )
    assert _in_a_fresh_interpreter(probe) == "[]"


def test_only_the_top_level_package_exports_names_lazily():
    """One lazy-export mechanism, `stalwart.__getattr__`: a name is imported from its module everywhere else."""
    lazy = [
        str(init.relative_to(REPO))
        for folder in LAYOUT_FOLDERS
        for init in sorted((REPO / folder).rglob("__init__.py"))
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for node in ast.parse(init.read_text()).body
        )
    ]
    assert lazy == []


def _in_a_fresh_interpreter(probe: str) -> str:
    """What `probe` prints, run by a new interpreter outside the repository (so it imports the installed package)."""
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.strip()


def test_every_package_folder_is_listed_for_installation():
    """A new subpackage left out of pyproject's list would be missing from the installed `stalwart`."""
    listed = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    on_disk = ["stalwart"] + [
        "stalwart." + ".".join(init.parent.relative_to(REPO).parts)
        for folder in LAYOUT_FOLDERS
        for init in sorted((REPO / folder).rglob("__init__.py"))
    ]
    assert sorted(listed) == sorted(on_disk)


@head_start
def _wheel() -> tuple[list[str], str]:
    """The names in the wheel pip builds of the repo, and its entry points: some seconds of a core, run from the start
    of the session (support/head_start.py)."""
    with tempfile.TemporaryDirectory(prefix="stalwart-wheel-") as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", scratch, str(REPO)],
            check=True,
            capture_output=True,
        )
        [wheel] = Path(scratch).glob("stalwart-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
            return names, archive.read(entry_points).decode()


@pytest.mark.slow
@pytest.mark.head_start(_wheel)
def test_the_wheel_installs_exactly_one_top_level_package_and_the_console_script(
    head_start_result: tuple[list[str], str],
):
    names, scripts = head_start_result
    top_level = {name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == {"stalwart"}
    assert "stalwart/workflows/agent.py" in names and "stalwart/contracts/run.py" in names
    assert "stalwart = stalwart.client.cli:console_main" in scripts
