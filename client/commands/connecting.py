"""The Temporal a command talks to: a client, a read-only reader of one run, or an embedded dev server with a worker."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from temporalio.client import Client

    from stalwart.client.api import StalwartClient
    from stalwart.client.reader import RunReader


async def reader(args: argparse.Namespace, run_id: str) -> RunReader:
    """A run to read, through the Temporal service alone: the SDK's client would be a third of the command's start."""
    from stalwart.activities.storage.converter import stalwart_converter
    from stalwart.client.connection import connect_service, ui_base
    from stalwart.client.reader import RunReader

    converter = stalwart_converter()  # first: a bad key or storage setting is said before any connecting
    service, namespace = await connect_service(
        args.address, args.namespace, profile=args.profile, config_file=args.config_file
    )
    address = service.config.target_host
    return RunReader(service.workflow_service, namespace, converter, run_id, ui_base(address))


async def client(args: argparse.Namespace) -> StalwartClient:
    from stalwart.client.api import StalwartClient

    return await StalwartClient.connect(
        args.address, args.namespace, task_queue=args.task_queue, profile=args.profile, config_file=args.config_file
    )


@contextlib.asynccontextmanager
async def temporal(args: argparse.Namespace, *, embedded: bool) -> AsyncIterator[tuple[Client, str | None]]:
    """A client; with `embedded`, on a dev server started here, with a worker running beside it."""
    from stalwart.client.connection import connect, record_dev_ui_url

    if not embedded:
        yield await connect(args.address, args.namespace, profile=args.profile, config_file=args.config_file), None
        return
    from stalwart.workers.dev_server import DevServer
    from stalwart.workers.worker import build_worker, default_registry

    registry = default_registry(args.tools)
    server = DevServer(port=args.port, ui_port=args.ui_port, db_file=args.data_dir / "temporal.db")
    codec = _dev_codec_server(args, server)
    print(f"starting the Temporal dev server ({server.db_file}, its log in {server.log_file}) …", file=sys.stderr)
    async with codec, server:
        metrics = getattr(args, "metrics_port", None)  # `stalwart dev --metrics-port`
        # A local server: no cloud profile, no TLS.
        temporal = await connect(server.address, from_config=False, metrics_port=metrics)
        # `stalwart run` in another shell prints links to this server's UI, on whatever --ui-port it has.
        record_dev_ui_url(server.address, server.ui_url)
        try:
            async with build_worker(temporal, registry=registry, task_queue=args.task_queue, metrics_port=metrics):
                yield temporal, server.ui_url
        finally:
            record_dev_ui_url(server.address, None)


def _dev_codec_server(args: argparse.Namespace, server: Any) -> contextlib.AbstractAsyncContextManager[Any]:
    """With encryption keys set, a codec server for the dev server's Web UI, which is pointed at it."""
    from stalwart.activities.storage.encryption import Keyring

    if Keyring.from_env() is None or not server.ui_port:
        return contextlib.nullcontext()
    from stalwart.client.codec_server import running, service_from_env

    origins = [f"http://localhost:{server.ui_port}", f"http://127.0.0.1:{server.ui_port}"]
    server.extra_args += ["--ui-codec-endpoint", f"http://localhost:{args.codec_port}"]
    print(
        f"payloads are encrypted; the Web UI decrypts them through the codec server on port {args.codec_port}",
        file=sys.stderr,
    )
    return running(service_from_env(origins), port=args.codec_port)


async def warn_without_workers(temporal: Client, task_queue: str, *, waiting: str = "the run") -> None:
    from stalwart.client.pollers import workers_polling

    if await workers_polling(temporal.workflow_service, temporal.namespace, task_queue) is False:
        print(
            f"warning: no worker is polling task queue {task_queue!r}; {waiting} will wait until one starts. "
            f"Start one with `stalwart worker`, or use `stalwart run --dev` for an embedded server and worker.",
            file=sys.stderr,
            flush=True,
        )
