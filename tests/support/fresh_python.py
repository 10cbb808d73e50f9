"""Probes run in a fresh interpreter, for tests of what a process loads or builds from its start."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Mapping


def printed_by(probe: str, env: Mapping[str, str] | None = None) -> str:
    """What `probe` prints, run in a fresh interpreter (from `/`, with no standard input); its stderr if it fails."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(probe)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd="/",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
