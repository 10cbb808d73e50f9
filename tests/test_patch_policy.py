"""Every `workflow.patched` id in the workflow code has a row in docs/patches.md saying when it goes, and every
row names an id the code still asks for."""

from __future__ import annotations

import ast
import re
import tomllib

from stalwart.workflows import patches

from support.repo_paths import REPO

TABLE = REPO / "docs" / "patches.md"
WORKFLOWS = REPO / "workflows"
ROW = re.compile(
    r"^\| `(?P<id>[a-z0-9-]+)` \|.*\| (?P<came>[\d.]+) \| (?P<deprecated>[\d.]+) \| (?P<deleted>[\d.]+) \|$"
)


def _rows() -> dict[str, tuple[str, str, str]]:
    rows = [ROW.match(line) for line in TABLE.read_text().splitlines()]
    return {row["id"]: (row["came"], row["deprecated"], row["deleted"]) for row in rows if row}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _constants() -> dict[str, str]:
    """The string constants of workflows/patches.py, by name."""
    tree = ast.parse((WORKFLOWS / "patches.py").read_text())
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _calls(name: str) -> list[tuple[str, ast.Call]]:
    """Every call of a function or method called `name` in workflows/, with the file it is in."""
    found = []
    for path in sorted(WORKFLOWS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if called == name:
                    found.append((path.name, node))
    return found


def test_every_patch_id_in_the_code_has_a_row_in_the_table_and_every_row_an_id_in_the_code():
    in_code = set(_constants().values())
    in_table = set(_rows())
    assert in_code - in_table == set(), "add a row to docs/patches.md for each of these"
    assert in_table - in_code == set(), "these rows of docs/patches.md name no patch the code asks for: remove them"


def test_every_patch_id_is_listed_in_all():
    assert sorted(patches.ALL) == sorted(_constants().values())
    assert list(patches.ALL) == list(_rows()), "list the rows of docs/patches.md in the order of patches.ALL"


def test_workflow_patched_is_called_only_in_the_patches_module():
    elsewhere = [file for file, _ in [*_calls("patched"), *_calls("deprecate_patch")] if file != "patches.py"]
    assert not elsewhere, f"ask `patches.active(patches.ID)` instead of workflow.patched in {elsewhere}"


def test_every_patch_asked_for_is_one_of_the_constants():
    constants = set(_constants())
    asked = [call.args[0] for file, call in _calls("active") if file != "patches.py"]
    assert asked, "the workflow asks for its patches through patches.active"
    unnamed = [ast.unparse(arg) for arg in asked if not (isinstance(arg, ast.Attribute) and arg.attr in constants)]
    assert not unnamed, f"pass a constant of workflows/patches.py to patches.active, not {unnamed}"


def test_each_patch_is_deprecated_and_then_deleted_in_later_releases_than_it_came_in():
    current = _version(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])
    for patch_id, (came, deprecated, deleted) in _rows().items():
        assert _version(came) <= current, f"{patch_id} came in {came}, after this release"
        assert _version(came) < _version(deprecated) < _version(deleted), patch_id
        assert current < _version(deleted), f"{patch_id} was due to be deleted in {deleted}: delete it"
