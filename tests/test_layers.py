"""The folders are layers: workflow code imports only the contracts, other workflow modules and the Temporal SDK."""

from __future__ import annotations

import ast
import sys

from support.repo_paths import REPO


def _imports(path) -> set[str]:
    """Absolute module names imported; a relative import is named `.` plus its module, so it never passes."""
    tree = ast.parse(path.read_text())
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    found |= {"." * node.level + (node.module or "") for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return found


def test_workflow_modules_import_only_contracts_workflows_and_the_sdk():
    allowed = ("stalwart.contracts", "stalwart.workflows", "temporalio")
    paths = sorted((REPO / "workflows").rglob("*.py"))
    assert paths
    for path in paths:
        stdlib = {name for name in _imports(path) if name.split(".")[0] in sys.stdlib_module_names}
        leaks = sorted(name for name in _imports(path) - stdlib if not name.startswith(allowed))
        assert not leaks, f"{path.name} imports {leaks}: schedule activities by name, with contracts only"


def test_contracts_import_no_other_layer():
    for path in sorted((REPO / "contracts").glob("*.py")):
        leaks = sorted(
            n for n in _imports(path) if n.startswith("stalwart.") and not n.startswith("stalwart.contracts")
        )
        assert not leaks, f"contracts/{path.name} imports {leaks}"
