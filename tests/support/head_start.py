"""A head start for the checks that spend half a minute in one subprocess (mypy over the package, the worker image's
pip install): they start on a thread as soon as pytest has collected the session's tests, and run on the core the
rest of the suite leaves idle (CI has two, and the suite keeps about one busy) while the tests before them run.

A test names its work with `@pytest.mark.head_start(work)` and waits for `work.result()`, then checks it as it
would have checked a run of its own. The work runs once, one at a time, and only for a selected test; run alone,
the test simply waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import pytest

T = TypeVar("T")

MARKER = "head_start"

_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="head-start")
"""One at a time: the point is the idle core, not a third process competing for two."""


class HeadStart(Generic[T]):
    """`work()`, run once on the head-start thread, from `start()` or the first `result()`."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._future: Future[T] | None = None
        self._lock = threading.Lock()

    def start(self) -> Future[T]:
        with self._lock:
            if self._future is None:
                self._future = _pool.submit(self._work)
            return self._future

    def result(self) -> T:
        """What `work()` returned (or the exception it raised), once it has run."""
        return self.start().result()


def head_start(work: Callable[[], T]) -> HeadStart[T]:
    """Decorate the work a test waits for: `@head_start def _mypy() -> CompletedProcess[str]: ...`."""
    return HeadStart(work)


def start_for(items: Iterable[pytest.Item]) -> None:
    """Start the work of every selected test marked `head_start`, in the tests' order."""
    for item in items:
        for marker in item.iter_markers(MARKER):
            for work in marker.args:
                work.start()
