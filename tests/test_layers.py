"""The folders are layers: workflow code imports only the contracts, other workflow modules and the Temporal SDK."""

from __future__ import annotations

import ast

from support.repo_paths import REPO


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    found |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return found


def test_workflow_modules_import_only_contracts_workflows_and_the_sdk():
    allowed = ("stalwart.contracts", "stalwart.workflows", "temporalio", "__future__")
    for path in sorted((REPO / "workflows").glob("*.py")):
        ours = {name for name in _imports(path) if name.startswith(("stalwart", "temporalio"))}
        leaks = sorted(name for name in ours if not name.startswith(allowed))
        assert not leaks, f"{path.name} imports {leaks}: schedule activities by name, with contracts only"


def test_contracts_import_no_other_layer():
    for path in sorted((REPO / "contracts").glob("*.py")):
        leaks = sorted(
            n for n in _imports(path) if n.startswith("stalwart.") and not n.startswith("stalwart.contracts")
        )
        assert not leaks, f"contracts/{path.name} imports {leaks}"
