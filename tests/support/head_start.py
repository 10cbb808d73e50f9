"""A head start for the work a test waits for: subprocesses that take seconds to half a minute of a core (mypy over
the package, the worker image's pip install, fresh-interpreter probes, the wheel build, the benchmarks' smoke runs)
start on threads before their tests, and run while other tests do.

A test names its work once, in its marker, and the `head_start_result` fixture hands it what the work returned::

    @head_start
    def _mypy() -> subprocess.CompletedProcess[str]:
        return subprocess.run([...], capture_output=True, text=True)

    @pytest.mark.head_start(_mypy)
    def test_mypy_finds_no_type_errors(head_start_result):
        assert head_start_result.returncode == 0, head_start_result.stdout

The test then checks it as it would have checked a run of its own. If the work raised, the fixture raises that
exception, and the test errors at its setup with it.

Each work runs in a `Pool`, which says how many of its works run at once and from when:

- `IDLE_CORE`, the default: one at a time, from the moment pytest has collected the session's tests, when the
  suite runs in one process (`pytest -n 0`), which keeps about one of CI's two cores busy; a third process would
  compete for two. Under pytest-xdist (the suite's default: two processes, each given whole files) no core is idle
  and a process cannot tell which files it will be given, so there each work of this pool starts when its test
  asks for it, and only that one: no work runs twice or for nothing.
- A pool made with `from_collection=False` starts its works at the first test that waits on one of them, as
  tests/test_benchmarks.py's smoke runs do, two at a time (under xdist, in the process given their file).

Only the works of the tests pytest selected run, each once, in the tests' order; a test run alone just waits for
its own. At the end of the session the works not started yet are dropped, and those running are waited for (a
benchmark stops its own dev server). tests/conftest.py loads this module as a pytest plugin.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

import pytest

T = TypeVar("T")

MARKER = "head_start"


class Pool:
    """Threads that run up to `at_once` works at a time: from the end of collection (`from_collection`), or else
    from the first test that waits on one of its works."""

    def __init__(self, name: str, *, at_once: int, from_collection: bool) -> None:
        self.from_collection = from_collection
        self._threads = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix=name)
        self._selected: list[HeadStart[Any]] = []
        self._open = False
        self._lock = threading.Lock()

    def select(self, work: HeadStart[Any]) -> None:
        """Queue the work of a selected test, to start when the pool opens."""
        with self._lock:
            self._selected.append(work)

    def open(self) -> None:
        """Start the selected works, in the tests' order (once; the pool runs `at_once` of them at a time)."""
        with self._lock:
            if self._open:
                return
            self._open = True
        for work in self._selected:
            work.start()

    def submit(self, work: Callable[[], T]) -> Future[T]:
        return self._threads.submit(work)

    def close(self) -> None:
        """Start no more works, and wait for those running."""
        self._threads.shutdown(wait=True, cancel_futures=True)


IDLE_CORE = Pool("head-start", at_once=1, from_collection=True)
"""One at a time from collection: the point is the idle core, not a third process competing for two."""


class HeadStart(Generic[T]):
    """`work()`, run once in `pool`: when the pool opens, or at the first `result()`."""

    def __init__(self, work: Callable[[], T], pool: Pool) -> None:
        self.pool = pool
        self._work = work
        self._future: Future[T] | None = None
        self._lock = threading.Lock()

    def start(self) -> Future[T]:
        with self._lock:
            if self._future is None:
                self._future = self.pool.submit(self._work)
            return self._future

    def result(self) -> T:
        """What `work()` returned (or the exception it raised), once it has run."""
        if not self.pool.from_collection:
            self.pool.open()
        return self.start().result()


def head_start(work: Callable[[], T], pool: Pool = IDLE_CORE) -> HeadStart[T]:
    """The work a test waits for, to name in its marker: `@head_start def _mypy(): ...`, or
    `head_start(run, BENCHMARK_RUNS)` for another pool."""
    return HeadStart(work, pool)


def _work_of(item: pytest.Item) -> HeadStart[Any] | None:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    [work] = marker.args
    return work


@pytest.fixture
def head_start_result(request: pytest.FixtureRequest) -> Any:
    """What the work named by this test's `head_start` marker returned, once it has run."""
    work = _work_of(request.node)
    if work is None:
        raise pytest.UsageError(f"{request.node.name} takes head_start_result: mark it @pytest.mark.head_start(work)")
    return work.result()


_pools: list[Pool] = []
"""The pools of the works this session selected."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(work): the test waits for this work (a HeadStart), started before it (support/head_start.py)",
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    for item in session.items:
        if (work := _work_of(item)) is not None:
            work.pool.select(work)
            if work.pool not in _pools:
                _pools.append(work.pool)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one of xdist's processes: each work starts when its test asks for it (see the module's docstring)
    for pool in _pools:
        if pool.from_collection:
            pool.open()


def pytest_sessionfinish(session: pytest.Session) -> None:
    for pool in _pools:
        pool.close()
