"""Argument types the benchmarks share: a size that cannot be measured is refused before a server starts.

Without them `--repeat 0` started a dev server, ran nothing, and ended in `statistics.median` of an empty list.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def count(text: str) -> int:
    """A whole number of 1 or more: runs, samples, turns, bytes."""
    return _count(text, 1)


def count_from(least: int) -> Callable[[str], int]:
    """A whole number of `least` or more, for a size whose first `least - 1` are not measured (a warm-up)."""
    return lambda text: _count(text, least)


def _count(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give {least} or more") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} measures nothing: give {least} or more")
    return value


def seconds(text: str) -> float:
    """A duration of 0 or more seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: give 0 or more, 0.05 say") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a duration: give 0 or more seconds, 0.05 say")
    return value
