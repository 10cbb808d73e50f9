"""The provider suite's fixtures: the wire server, and a provider flavour with its key in the environment."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from flavors import FLAVORS, Flavor

from wire_server.server import WireServer


@pytest.fixture(scope="session")
async def wire() -> AsyncIterator[WireServer]:
    server = WireServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(params=FLAVORS, ids=[f.id for f in FLAVORS])
def flavor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Flavor:
    """A provider flavour with a key in the (worker's) environment."""
    chosen: Flavor = request.param
    monkeypatch.setenv(chosen.key_env, f"sk-test-{chosen.id}-0123456789")
    return chosen
