"""The agent workflow stays readable as its loop: a short module, and workflow classes with few methods.

A concern that grows (the inbox, approvals, visibility, the chain, the model step, tool calls) grows in its own
module of workflows/, as an object the workflow delegates to, not as more methods of the workflow.
"""

from __future__ import annotations

import ast

from support.repo_paths import REPO

WORKFLOWS = REPO / "workflows"
MAX_LOOP_LINES = 400
MAX_WORKFLOW_METHODS = 25


def _is_workflow_class(node: ast.ClassDef) -> bool:
    """Decorated with `workflow.defn` (called or not)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "defn":
            return True
    return False


def test_the_loop_module_is_at_most_400_lines():
    lines = len((WORKFLOWS / "agent.py").read_text().splitlines())
    assert lines <= MAX_LOOP_LINES, f"workflows/agent.py has {lines} lines: move a concern into a module of its own"


def test_no_workflow_class_has_more_than_25_methods():
    classes = [
        (path.name, node)
        for path in sorted(WORKFLOWS.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and _is_workflow_class(node)
    ]
    assert classes, "the workflow classes are found"
    counts = {
        f"{file}:{node.name}": sum(isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in node.body)
        for file, node in classes
    }
    too_many = {name: count for name, count in counts.items() if count > MAX_WORKFLOW_METHODS}
    assert not too_many, f"move a concern into a module of its own: {too_many}"
