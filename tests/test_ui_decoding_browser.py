"""In a real browser: the Web UI of `stalwart dev` with encryption on shows a run's goal and answer decoded.

Needs Chromium, which pip cannot install: `support.chromium` installs it in CI and skips the test elsewhere.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from stalwart.activities.storage.encryption import KEYS_VAR
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.workers.dev_server import free_port

from support.chromium import chromium as _chromium

AGENT = Path(__file__).parent.parent / "agents" / "calculator.toml"
ANSWER = "(17 * 23) + 4 = 395: 17 × 23 is 391, plus 4."


async def _read_until(process: subprocess.Popen[str], text: str) -> str:
    assert process.stderr is not None
    seen = ""
    while text not in seen:
        line = await asyncio.to_thread(process.stderr.readline)
        assert line, f"the process ended before printing {text!r}: {seen}"
        seen += line
    return seen


@pytest.mark.slow
async def test_the_dev_web_ui_shows_an_encrypted_runs_goal_and_answer_decoded_in_a_real_browser(tmp_path: Path):
    chromium = await asyncio.to_thread(_chromium)
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "STALWART_"))}
    env |= {
        KEYS_VAR: f"k1:{base64.b64encode(os.urandom(32)).decode()}",
        "STALWART_STORAGE": str(tmp_path / "storage"),
        "STALWART_STORAGE_THRESHOLD_BYTES": "1000",  # the long goal below is kept in storage, the answer in history
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    stalwart = [sys.executable, "-m", "stalwart.client.cli"]
    dev = subprocess.Popen(
        [*stalwart, "dev", "--port", str(port), "--ui-port", str(ui_port), "--codec-port", str(codec_port)]
        + ["--data-dir", str(tmp_path / "data")],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        await _read_until(dev, "A worker is running")
        goal = "What is (17 * 23) + 4? " + "Show your working. " * 80
        run = await asyncio.to_thread(
            subprocess.run,
            [*stalwart, "run", str(AGENT), goal, "--address", f"127.0.0.1:{port}"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        assert "395" in run.stdout, "the CLI, with the keys, reads the answer"
        [run_id] = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("run ")]
        # Without the keys the history shows nothing readable: input and result are references to sealed objects.
        keyless = await Client.connect(f"127.0.0.1:{port}", data_converter=DATA_CONVERTER)
        handle = keyless.get_workflow_handle(run_id)
        history = await handle.fetch_history()
        started, completed = history.events[0], history.events[-1]
        [goal_payload] = started.workflow_execution_started_event_attributes.input.payloads
        [answer_payload] = completed.workflow_execution_completed_event_attributes.result.payloads
        assert goal_payload.metadata["encoding"] == b"json/protobuf", "the goal was stored externally"
        assert answer_payload.metadata["encoding"] == b"json/protobuf", "the result (with every step) too"
        activity_results = [
            p.metadata["encoding"]
            for e in history.events
            if e.HasField("activity_task_completed_event_attributes")
            for p in e.activity_task_completed_event_attributes.result.payloads
        ]
        assert activity_results and set(activity_results) == {b"binary/encrypted"}
        assert "17 * 23" not in history.to_json() and "Show your working" not in history.to_json()

        page = f"http://localhost:{ui_port}/namespaces/default/workflows/{run_id}"
        browser = await asyncio.to_thread(
            subprocess.run,
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000"]
            + [f"--user-data-dir={tmp_path / 'chromium'}", "--dump-dom", page],
            capture_output=True,
            text=True,
        )
        dom = browser.stdout
        assert "What is (17 * 23) + 4? Show your working." in dom, (
            f"the UI did not show the goal kept in storage, decoded: {browser.stderr[-2000:]}"
        )
        assert ANSWER in dom, "the UI did not show the answer decoded"
    finally:
        os.killpg(dev.pid, signal.SIGTERM)
        await asyncio.to_thread(dev.wait)
