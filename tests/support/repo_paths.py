"""Where things are in this repository, for tests that read its files or run its commands."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AGENTS_DIR = REPO / "agents"
