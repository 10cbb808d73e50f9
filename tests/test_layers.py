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


NONDETERMINISTIC_MODULES = {
    "time", "random", "uuid", "os", "secrets", "socket", "subprocess", "threading", "multiprocessing",
    "urllib", "http", "shutil", "tempfile", "pathlib", "logging", "signal", "select", "selectors",
}  # fmt: skip
CLOCK_CALLS = {"now", "utcnow", "today"}
IO_BUILTINS = {"open", "input", "print", "exec", "eval", "breakpoint"}


def test_workflow_code_calls_no_clock_randomness_or_io():
    """`AgentWorkflow` runs outside the SDK's sandbox (workflows/agent.py says why), so nothing watches its calls
    at run time: this does. Use `workflow.now()`, `workflow.random()`, `workflow.uuid4()` and
    `workflow.logger`; anything else that touches the world belongs in an activity."""
    paths = sorted((REPO / "workflows").rglob("*.py"))
    found = []
    for path in paths:
        roots = {name.split(".")[0] for name in _imports(path)}
        found += [f"{path.name} imports {m}" for m in sorted(roots & NONDETERMINISTIC_MODULES)]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in IO_BUILTINS:
                found.append(f"{path.name}:{node.lineno} calls {func.id}()")
            if isinstance(func, ast.Attribute) and func.attr in CLOCK_CALLS:
                owner = func.value.id if isinstance(func.value, ast.Name) else ""
                if owner != "workflow":
                    found.append(f"{path.name}:{node.lineno} calls {owner}.{func.attr}()")
    assert not found, "non-deterministic calls in workflow code:\n" + "\n".join(found)
