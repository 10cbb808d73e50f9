"""The built-in read_file: off until the worker names a directory, and never reads outside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from activity_calls import call

from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools import builtin
from stalwart.activities.tools.registry import ToolRegistry


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A readable directory with a file, next to a secret that must stay unreadable."""
    root = tmp_path / "shared"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plan.md").write_text("ship on Tuesday", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("the password", encoding="utf-8")
    return root


async def _read(path: str, tool=builtin.read_file) -> dict:
    result = await call(ToolActivities(ToolRegistry([tool])), tool.spec(), {"path": path})
    return json.loads(result.text) | {"is_error": result.is_error}


async def test_read_file_is_off_until_the_worker_names_a_directory(monkeypatch):
    monkeypatch.delenv(builtin.FILES_ROOT_ENV, raising=False)
    answer = await _read("notes/plan.md")
    assert answer["is_error"]
    assert "read_file is off on this worker; set STALWART_FILES_ROOT" in answer["error"]


async def test_read_file_reads_a_file_inside_the_directory(shared, monkeypatch):
    monkeypatch.setenv(builtin.FILES_ROOT_ENV, str(shared))
    answer = await _read("notes/plan.md")
    assert (answer["content"], answer["truncated"]) == ("ship on Tuesday", False)


async def test_read_file_refuses_path_traversal(shared, monkeypatch):
    monkeypatch.setenv(builtin.FILES_ROOT_ENV, str(shared))
    answer = await _read("notes/../../secret.txt")
    assert answer["is_error"]
    assert "is outside the readable directory" in answer["error"]


async def test_read_file_refuses_an_absolute_path_outside_the_directory(shared, monkeypatch):
    monkeypatch.setenv(builtin.FILES_ROOT_ENV, str(shared))
    answer = await _read(str(shared.parent / "secret.txt"))
    assert answer["is_error"]
    assert "is outside the readable directory" in answer["error"]


async def test_read_file_refuses_a_symlink_that_leaves_the_directory(shared, monkeypatch):
    (shared / "escape.txt").symlink_to(shared.parent / "secret.txt")
    monkeypatch.setenv(builtin.FILES_ROOT_ENV, str(shared))
    answer = await _read("escape.txt")
    assert answer["is_error"]
    assert "is outside the readable directory" in answer["error"]


async def test_read_file_caps_the_size_at_the_worker_limit(shared):
    capped = builtin.read_file_tool(shared, max_bytes=4)
    answer = await _read("notes/plan.md", tool=capped)
    assert (answer["content"], answer["truncated"]) == ("ship", True)
