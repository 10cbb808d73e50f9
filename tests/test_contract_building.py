"""Contracts are built on first use: a CLI command builds the few it reads, and threads may meet one at once."""

from __future__ import annotations

from support.fresh_python import printed_by  # a fresh interpreter has built no contract yet


def test_importing_the_client_and_the_cli_builds_no_contract():
    built = printed_by(
        """
        import stalwart.client.api, stalwart.client.cli, stalwart.contracts
        from stalwart.contracts.model import Contract

        def every(kind):
            for sub in kind.__subclasses__():
                yield sub
                yield from every(sub)

        contracts = set(every(Contract))
        assert len(contracts) > 30, len(contracts)
        print(sorted(c.__name__ for c in contracts if c.__pydantic_complete__))
        """
    )
    assert built == "[]"


def test_threads_meeting_a_contract_first_at_once_each_validate_it_as_that_contract():
    """`ArchivedStep` extends `StepRecord`: pydantic before 2.14 could hand a thread the parent's validator while
    another thread was building the subclass's (pyproject.toml requires 2.14)."""
    results = printed_by(
        """
        import threading
        from concurrent.futures import ThreadPoolExecutor
        from stalwart.contracts.run import ArchivedStep

        start = threading.Barrier(16)

        def first_use(n):
            start.wait()
            step = ArchivedStep.model_validate({"step": n, "role": "tool", "started_at": "2026-01-01T00:00:00Z"})
            return type(step).__name__, step.step

        with ThreadPoolExecutor(16) as pool:
            print(sorted(set(pool.map(first_use, range(16)))) == [("ArchivedStep", n) for n in range(16)])
        """
    )
    assert results == "True"
