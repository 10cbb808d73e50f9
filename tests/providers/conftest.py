"""The provider suite's fixtures: a provider flavour with its key in the environment (the wire server is shared)."""

from __future__ import annotations

import pytest
from flavors import FLAVORS, Flavor


@pytest.fixture(params=FLAVORS, ids=[f.id for f in FLAVORS])
def flavor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Flavor:
    """A provider flavour with a key in the (worker's) environment."""
    chosen: Flavor = request.param
    monkeypatch.setenv(chosen.key_env, f"sk-test-{chosen.id}-0123456789")
    return chosen
