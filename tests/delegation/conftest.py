"""Fixtures of the delegation tests: the A2A test server of tests/a2a, for sub-agents reached by URL."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "a2a"))

from a2a_agents import A2AServer, roster  # noqa: E402
from a2a_http import serving  # noqa: E402


@pytest.fixture
async def a2a_server() -> AsyncIterator[A2AServer]:
    server = A2AServer(roster())
    async with serving(server.app(), server.port):
        yield server
