"""A run that has ended, as every command that acts on one says it, under one rule (docs/errors.md, exit statuses).

Asking a run that has ended to end (`cancel`, `close`) finds done what was asked: nothing is sent, exit status 0,
as stopping what is stopped is done (a `cancel` in a script's cleanup must not fail because the run finished
first). Asking it for anything else (`approve`, `reject`, `send`, `chat`) is refused: exit status 1, the run's
state refused it, as a `SessionClosed` is. Either way stderr says the run has ended, how, and what to do instead.
"""

from __future__ import annotations

import sys

from stalwart.client.commands import EXIT_OK, EXIT_RUN_FAILED


def already_ended(kind: str, run_id: str, how: str, *, nothing: str) -> int:
    """`cancel` or `close` of a run that has ended: said on stderr, exit status 0 (what was asked holds already)."""
    print(
        f"{kind} {run_id} had already ended ({how}): nothing was {nothing}; "
        f"`stalwart show {run_id}` prints how it ended",
        file=sys.stderr,
    )
    return EXIT_OK


def refused(kind: str, run_id: str, how: str, *, because: str, instead: str) -> int:
    """Anything else asked of a run that has ended: one `error:` line on stderr, exit status 1."""
    print(f"error: {kind} {run_id} has ended ({how}), so {because}; {instead}", file=sys.stderr)
    return EXIT_RUN_FAILED
