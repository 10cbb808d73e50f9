"""Serving an ASGI app over real HTTP on 127.0.0.1 inside the test's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn
from starlette.types import ASGIApp


@contextlib.asynccontextmanager
async def serving(app: ASGIApp, port: int) -> AsyncIterator[None]:
    """Serve `app` on 127.0.0.1:`port` until the block ends.

    In the test's loop rather than a thread, so the app may use the test's
    Temporal client, which belongs to this loop.
    """
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError(f"the test HTTP server could not start on port {port}")
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        await task
