"""`stalwart history export` and `replay`: record runs as files and replay them against the code here."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from stalwart.client.commands import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, WORKFLOW_TYPE, connecting
from stalwart.contracts.errors import UsageError

if TYPE_CHECKING:
    from temporalio.client import Client


async def export(args: argparse.Namespace) -> int:
    from stalwart.client.replay import export_matching, export_run

    if (args.run_id is None) == (args.query is None):
        print("error: name a RUN_ID or give --query, not both", file=sys.stderr)
        return EXIT_USAGE
    if args.output.exists() and not args.output.is_dir():
        raise UsageError(
            f"-o names a folder, and {args.output} is a file: each run of a chain is a file of its own in it, "
            "named after the run (-o tests/histories)"
        )
    temporal = (await connecting.client(args)).temporal
    if args.run_id:
        for path in await export_run(temporal, args.run_id, args.output):
            print(path)
        return EXIT_OK
    written = 0
    async for path in export_matching(temporal, _stalwart_runs(args.query), args.output):
        print(path, flush=True)  # each file as it is written: a thousand runs take a while
        written += 1
    if not written:  # nothing written is no success: a CI job that records fixtures so would go on without them
        print(
            f"error: no run matches --query {args.query!r}: nothing exported; `stalwart runs --query` shows what a "
            "query matches",
            file=sys.stderr,
        )
        return EXIT_RUN_FAILED
    return EXIT_OK


async def replay(args: argparse.Namespace) -> int:
    from stalwart.client.replay import LIVE_LIMIT, ReplayOutcome, replaying_files, replaying_live

    if bool(args.paths) == bool(args.query):
        either = "give history files or folders, or --query"
        print(f"error: {either}, not both" if args.paths else f"error: {either}", file=sys.stderr)
        return EXIT_USAGE
    if (args.since or args.limit is not None) and not args.query:
        option = "--since" if args.since else "--limit"
        print(f"error: {option} chooses among the runs of --query; history files are replayed whole", file=sys.stderr)
        return EXIT_USAGE
    if args.query:
        query = _stalwart_runs(args.query)
        if args.since:
            query += f" AND StartTime > '{_since(args.since)}'"
        temporal = (await connecting.client(args)).temporal
        limit = LIVE_LIMIT if args.limit is None else args.limit
        _say_how_many(await _matching(temporal, query), limit)
        replaying = replaying_live(temporal, query, limit)
    else:
        replaying = replaying_files(args.paths)
    outcomes: list[ReplayOutcome] = []
    async for outcome in replaying:  # each line as soon as its run is replayed: a long replay shows its progress
        outcomes.append(outcome)
        verdict = "ok" if outcome.ok else "CANNOT READ" if outcome.unreadable else "DIVERGES"
        print(f"{verdict}  {outcome.name} {outcome.run_id}", flush=True)
        if outcome.divergence or outcome.unreadable:
            print(f"    {outcome.divergence or outcome.unreadable}", flush=True)
    diverged = sum(o.divergence is not None for o in outcomes)
    unreadable = sum(o.unreadable is not None for o in outcomes)
    failed = diverged + unreadable
    print(
        f"{len(outcomes) - failed} replayed, {diverged} diverged"
        + (f", {unreadable} could not be read here" if unreadable else ""),
        file=sys.stderr,
    )
    if not outcomes:
        if args.query:  # the pre-deploy gate over the runs in flight passes when none is: nothing can diverge
            print(
                "note: no run matches the query, so there was nothing to replay; `stalwart runs --query ...` "
                "shows what a query matches, if you expected some",
                file=sys.stderr,
            )
            return EXIT_OK
        else:
            folders = " ".join(str(path) for path in args.paths)
            print(
                f"error: no history files (*.json) in {folders}: record some with "
                f"`stalwart history export RUN_ID -o {args.paths[0]}`",
                file=sys.stderr,
            )
        return EXIT_RUN_FAILED
    return EXIT_RUN_FAILED if failed else EXIT_OK


def _stalwart_runs(query: str) -> str:
    """The user's visibility query, narrowed to Stalwart's runs: other workflows of the namespace are not ours."""
    return f"WorkflowType='{WORKFLOW_TYPE}' AND ({query})"


async def _matching(temporal: Client, query: str) -> int | None:
    """How many runs `query` matches, or None from a server whose visibility store cannot count."""
    from temporalio.service import RPCError

    try:
        return (await temporal.count_workflows(query)).count
    except RPCError:
        return None


def _say_how_many(matching: int | None, limit: int) -> None:
    """What a replay of the query's runs is about to do, and whether `limit` leaves some out."""
    if matching is None or matching == 0:
        return
    if matching > limit:
        print(
            f"the query matches {matching:,} runs: replaying the newest {limit:,} (--limit); narrow it with --since "
            "or a tighter --query, or raise --limit",
            file=sys.stderr,
        )
    else:
        print(f"replaying the {matching:,} run{'s' if matching != 1 else ''} the query matches", file=sys.stderr)


def _since(text: str) -> str:
    units = {"d": "days", "h": "hours", "m": "minutes"}
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit():
        raise UsageError(f"--since takes a number and d, h or m, e.g. 7d; not {text!r}")
    try:
        start = datetime.now(UTC) - timedelta(**{units[text[-1]]: int(text[:-1])})
    except OverflowError:
        raise UsageError(
            f"--since {text} reaches back before the year 1; leave --since out to replay every run the query matches"
        ) from None
    return start.strftime("%Y-%m-%dT%H:%M:%SZ")
