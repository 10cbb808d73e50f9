"""The secrets a test process has remembered (`stalwart.activities.secrets`), as they were before a test.

A worker process remembers every secret it has seen for as long as it lives, and redaction of a streamed answer
holds back any ending that could start one of them: a test that leaves random values behind changes what another
test's stream shows (one starting with `b` held back the `b` of "a [redacted] b"). Tests that remember their own
values use `forgetting_afterwards` so the process is as it was after them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stalwart.activities import secrets


@pytest.fixture
def forgetting_afterwards() -> Iterator[None]:
    before = (secrets._values, secrets._by_length)
    yield
    secrets._values, secrets._by_length = before
