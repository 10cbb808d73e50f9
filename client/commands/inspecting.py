"""`stalwart show`, `runs` and `check`: read a run, list runs, validate an agent file. They start nothing."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from stalwart.client import render
from stalwart.client.commands import EXIT_OK, connecting

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from stalwart.contracts.agent import AgentSpec


async def show(args: argparse.Namespace) -> int:
    handle = await connecting.reader(args, args.run_id)
    if args.events:
        events = await handle.events()
        if args.json:
            print(json.dumps([e.model_dump(mode="json") for e in events], indent=2))
        else:
            render.print_events(events, sys.stdout)
        return EXIT_OK
    state = await handle.state()
    if args.json:
        print(state.model_dump_json(indent=2))
    else:
        retrying = [] if handle.closed else await handle.retrying()  # a closed run retries nothing: no RPC to ask
        render.print_state(args.run_id, state, handle.ui_url, sys.stdout, retrying=retrying)
    return EXIT_OK


async def list_runs(args: argparse.Namespace) -> int:
    query = args.query
    if args.on_task_queue is not None:  # a condition of the query: the server filters, so --limit counts these only
        on_queue = f"TaskQueue = {_literal(args.on_task_queue)}"
        query = f"{on_queue} AND ({query})" if query else on_queue
    stalwart = await connecting.client(args)
    render.print_runs(await stalwart.list(query, limit=args.limit), sys.stdout)
    return EXIT_OK


def _literal(text: str) -> str:
    """`text` as a string of a visibility query: quoted, its backslashes and quotes escaped by a backslash."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def check(args: argparse.Namespace) -> int | Coroutine[Any, Any, int]:
    """An agent without MCP servers is checked here and now, with no event loop (asyncio is a tenth of the command's
    start); one with MCP servers returns the coroutine that lists their tools from the servers themselves."""
    from stalwart.client.agent_files import check_agent
    from stalwart.client.tool_names import own_tools

    spec = check_agent(args.agent)
    if spec.mcp_servers:
        return _check_with_servers(args, spec)
    return _checked(args, spec, own_tools(spec).lines)


async def _check_with_servers(args: argparse.Namespace, spec: AgentSpec) -> int:
    from stalwart.client.agent_files import AgentFileError
    from stalwart.client.tool_names import listed_tools
    from stalwart.contracts.agent import unknown_tool_names

    # The names the model will see, MCP tools listed from their servers and named by the clash rule.
    listed = await listed_tools(spec)
    unknown = unknown_tool_names(spec, listed.names) if listed.names is not None else None
    if unknown is not None:  # only now knowable: the MCP servers' tools are listed
        raise AgentFileError(f"{args.agent}: {unknown}")
    return _checked(args, spec, listed.lines)


def _checked(args: argparse.Namespace, spec: AgentSpec, lines: list[str]) -> int:
    """Print the spec on stdout, then on stderr that it is valid and the tools the model will see."""
    print(spec.model_dump_json(indent=2, exclude_defaults=True))
    print(f"ok: {args.agent} describes agent {spec.name!r}", file=sys.stderr)
    if spec.output is not None:  # typed output: the schema is `output.schema` above
        print(
            f"output: a JSON value that fits `output.schema` above, asked for again up to {spec.output.retries} "
            "time(s) when it does not",
            file=sys.stderr,
        )
    if lines:
        print("tools the model sees:", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)
    return EXIT_OK
