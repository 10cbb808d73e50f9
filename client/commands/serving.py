"""`stalwart worker`, `dev` and `codec-server`: the processes that run agents and serve the Web UI."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from stalwart.client.commands import EXIT_OK, EXIT_USAGE, TASK_QUEUE, connecting
from stalwart.contracts.errors import UsageError

if TYPE_CHECKING:
    pass


async def worker(args: argparse.Namespace) -> int:
    _check_tracing_setting()

    from stalwart.client.connection import connect
    from stalwart.workers.search_attributes import ensure_search_attributes
    from stalwart.workers.worker import build_worker, default_registry

    registry = default_registry(args.tools)
    versioning = _deployment_options(args)  # before connecting: a wrong option is said at once
    if args.metrics_port:
        from stalwart.workers.telemetry import metrics_runtime

        try:
            metrics_runtime(args.metrics_port)  # before connecting: the client runs on it
        except (RuntimeError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_USAGE
    temporal = await connect(
        args.address,
        args.namespace,
        profile=args.profile,
        config_file=args.config_file,
        metrics_port=args.metrics_port,
    )
    added = await ensure_search_attributes(temporal)
    if added:
        print(f"registered search attributes: {', '.join(added)}", file=sys.stderr)
    print(
        f"worker polling task queue {args.task_queue!r} on {temporal.service_client.config.target_host} "
        f"with tools: {', '.join(registry.names())}",
        file=sys.stderr,
    )
    if args.metrics_port:
        from stalwart.workers.telemetry import metrics_address

        print(f"metrics: http://{metrics_address(args.metrics_port)}/metrics", file=sys.stderr)
    from stalwart.workers.shutdown import Shutdown

    shutdown = Shutdown(args.grace_seconds)
    try:
        async with build_worker(
            temporal,
            registry=registry,
            task_queue=args.task_queue,
            metrics_port=args.metrics_port,
            graceful_shutdown_timeout=timedelta(seconds=args.grace_seconds),
            **versioning,
        ):
            if versioning and args.set_current:
                from stalwart.workers.versioning import set_current_version

                await set_current_version(temporal, args.deployment_name, args.build_id)
                print(
                    f"{args.deployment_name}.{args.build_id} is now the deployment's current version", file=sys.stderr
                )
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                shutdown.begin()  # SIGTERM or Ctrl-C: the worker drains as this block exits
                raise
    finally:
        await shutdown.finish()
    return EXIT_OK


def _check_tracing_setting() -> None:
    """Refuse an OTLP endpoint traces cannot go to before importing the worker (seconds on a loaded machine) or
    starting a dev server: the same one line the worker's tracing would say once it had done both."""
    from stalwart.contracts.tracing import check_otlp_endpoint, tracing_wanted

    if tracing_wanted():
        check_otlp_endpoint()


def _deployment_options(args: argparse.Namespace) -> dict[str, Any]:
    """`build_worker`'s `deployment_config` from --deployment-name/--build-id, or nothing for an unversioned worker.

    An option that needs a version, given to an unversioned worker, is refused: ignored, the worker would run
    without the behaviour the person asked for."""
    if not args.deployment_name and not args.build_id:
        for option, given in (("--set-current", args.set_current), ("--versioning-behavior", args.versioning_behavior)):
            if given:
                raise UsageError(
                    f"{option} needs --deployment-name and --build-id (or STALWART_DEPLOYMENT_NAME and "
                    "STALWART_BUILD_ID): this worker is not versioned"
                )
        return {}
    if not args.deployment_name or not args.build_id:
        given, missing = ("--build-id", "--deployment-name") if args.build_id else ("--deployment-name", "--build-id")
        raise UsageError(f"{given} needs {missing} too: a worker's version is its deployment name and its build id")
    from stalwart.workers.versioning import deployment_config

    behaviour = args.versioning_behavior = args.versioning_behavior or "pinned"
    try:
        config = deployment_config(args.deployment_name, args.build_id, args.versioning_behavior)
    except ValueError as err:  # a name with a dot, or STALWART_VERSIONING_BEHAVIOR (argparse checks only the option)
        raise UsageError(str(err)) from err
    print(
        f"worker version {args.deployment_name}.{args.build_id} ({behaviour}); new runs start on it "
        f"once it is current: temporal worker deployment set-current-version --deployment-name {args.deployment_name} "
        f"--build-id {args.build_id}",
        file=sys.stderr,
    )
    return {"deployment_config": config}


async def dev(args: argparse.Namespace) -> int:
    _check_tracing_setting()

    from stalwart.workers.shutdown import Shutdown

    args.address, args.namespace, args.task_queue = None, None, TASK_QUEUE
    if args.metrics_port:
        from stalwart.workers.telemetry import metrics_runtime

        try:
            metrics_runtime(args.metrics_port)  # said at once, before the dev server starts
        except (RuntimeError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_USAGE
    shutdown = Shutdown(0.0)  # runs cut short resume when the dev server starts again
    try:
        async with connecting.temporal(args, embedded=True) as (_, ui_url):
            print(f"Temporal dev server on 127.0.0.1:{args.port}, data in {args.data_dir}", file=sys.stderr)
            print(f"Temporal UI: {ui_url}", file=sys.stderr)
            if args.metrics_port:
                from stalwart.workers.telemetry import metrics_address

                print(f"metrics: http://{metrics_address(args.metrics_port)}/metrics", file=sys.stderr)
            print(
                f"A worker is running; start runs from another shell with `stalwart run AGENT GOAL`"
                f"{'' if args.port == 7233 else f' and TEMPORAL_ADDRESS=127.0.0.1:{args.port}'}. Ctrl-C stops.",
                file=sys.stderr,
            )
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                shutdown.begin()
                raise
    finally:
        await shutdown.finish()
    return EXIT_OK


async def codec_server(args: argparse.Namespace) -> int:
    from stalwart.client.codec_server import serve

    return await serve(args)
