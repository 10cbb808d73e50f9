"""`stalwart serve` as a person starts it: the page, its files and the API on one port, and what it says at start."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator

import httpx
import pytest

from stalwart.workers.dev_server import free_port

pytestmark = pytest.mark.slow


async def _started(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    said = ""
    while "Temporal UI links go to" not in said:
        line = await asyncio.to_thread(process.stderr.readline)
        assert line, f"stalwart serve ended before serving: {said}"
        said += line
    return said


@contextlib.asynccontextmanager
async def _serve(dev_env, task_queue: str, token: str | None) -> AsyncIterator[tuple[str, str]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "STALWART_SERVE_TOKEN"}
    if token:
        env["STALWART_SERVE_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-m", "stalwart.client.cli", "serve", "--port", str(port)]
        + ["--address", dev_env.address, "--task-queue", task_queue],
        env=env,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield f"http://127.0.0.1:{port}", await _started(process)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait)


async def test_serve_without_a_token_serves_the_page_and_the_api_on_the_loopback_and_says_so(dev_env, task_queue):
    async with _serve(dev_env, task_queue, token=None) as (url, said), httpx.AsyncClient(base_url=url) as http:
        page = await http.get("/")
        script = await http.get("/static/app.js")
        runs = await http.get("/api/runs")
        missing = await http.get("/api/nothing-here")
    assert "loopback only" in said and "STALWART_SERVE_TOKEN" in said
    assert page.status_code == 200 and "<title>Stalwart</title>" in page.text
    assert script.status_code == 200 and "Last-Event-ID" in script.text
    assert runs.status_code == 200 and "runs" in runs.json()
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_serve_with_a_token_lets_in_only_who_sends_it(dev_env, task_queue):
    async with _serve(dev_env, task_queue, token="t0ken") as (url, said), httpx.AsyncClient(base_url=url) as http:
        page = await http.get("/")
        without = await http.get("/api/runs")
        with_it = await http.get("/api/runs", headers={"Authorization": "Bearer t0ken"})
    assert "Bearer" in said and "loopback only" not in said
    assert page.status_code == 200, "the page itself asks for the token"
    assert without.status_code == 401 and with_it.status_code == 200


async def test_serve_stopped_by_sigterm_ends_without_a_traceback(dev_env, task_queue):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "stalwart.client.cli", "serve", "--port", str(port)]
        + ["--address", dev_env.address, "--task-queue", task_queue],
        env={k: v for k, v in os.environ.items() if k != "STALWART_SERVE_TOKEN"},
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    await _started(process)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        assert (await http.get("/api/runs")).status_code == 200
    process.send_signal(signal.SIGTERM)
    _, rest = await asyncio.to_thread(process.communicate)
    assert "Traceback" not in rest and "CancelledError" not in rest, rest
    assert process.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM)
