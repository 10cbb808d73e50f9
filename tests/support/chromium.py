"""Headless Chromium for the browser tests: found (in CI, installed from Debian's packages) and driven over the
Chrome DevTools Protocol, a websocket (aiohttp's client).

Chromium cannot be installed by pip. Under `CI=true` on a Debian machine where the suite runs as root, it is
installed with `apt-get install chromium` (about a minute) so that CI always runs the browser tests; elsewhere,
without Chromium, they are skipped and say how to install it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

INSTALL = "apt-get install chromium"


def installed_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def chromium() -> str:
    """Chromium's path; in CI, installed from Debian's packages first when it is missing."""
    found = installed_chromium()
    if found:
        return found
    can_install = os.environ.get("CI") == "true" and hasattr(os, "geteuid") and os.geteuid() == 0
    if not (can_install and shutil.which("apt-get")):
        pytest.skip(f"Chromium is not installed (Debian: {INSTALL})")
    quiet = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        print(f"installing Chromium for the browser test: {' '.join(command)}", file=sys.stderr)
        done = subprocess.run(command, env=quiet, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{' '.join(command)} failed, so CI cannot run the browser test: {done.stderr}"
    found = installed_chromium()
    assert found, f"{INSTALL} succeeded but no chromium is on PATH"
    return found


class Page:
    """One tab, driven by DevTools Protocol commands."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._socket:
            data = json.loads(message.data)
            future = self._waiting.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        await self._socket.send_json({"id": call_id, "method": method, "params": params})
        answer = await future
        assert "error" not in answer, f"{method}: {answer['error']}"
        return dict(answer.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        answer = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in answer, f"{expression}: {answer['exceptionDetails']}"
        return answer["result"].get("value")

    async def until(self, expression: str) -> Any:
        """The expression's value once it is truthy, read every 50 ms."""
        while not (value := await self.evaluate(expression)):
            await asyncio.sleep(0.05)
        return value

    async def type(self, text: str) -> None:
        await self.send("Input.insertText", text=text)

    async def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            await self.send(
                "Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13, text="\r"
            )

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


@contextlib.asynccontextmanager
async def headless_page(executable: str, profile: Path, *, width: int = 1360, height: int = 860) -> AsyncIterator[Page]:
    """A headless Chromium with one tab of `width` x `height`, until the block ends."""
    import aiohttp
    import httpx

    browser = subprocess.Popen(
        [executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0"]
        + [f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert browser.stderr is not None
        while True:
            line = await asyncio.to_thread(browser.stderr.readline)
            assert line, "Chromium exited before it listened for the DevTools protocol"
            if "DevTools listening on ws://" in line:
                endpoint = line.split("ws://", 1)[1].split("/", 1)[0]
                break
        async with httpx.AsyncClient() as http:
            targets = (await http.get(f"http://{endpoint}/json/list")).json()
        [target] = [t for t in targets if t["type"] == "page"][:1]
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket,
        ):
            page = Page(socket)
            try:
                await page.send("Page.enable")
                await page.send("Runtime.enable")
                size = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
                await page.send("Emulation.setDeviceMetricsOverride", **size)
                yield page
            finally:
                await page.close()
    finally:
        browser.terminate()
        await asyncio.to_thread(browser.wait)
