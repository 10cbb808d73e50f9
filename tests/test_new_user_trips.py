"""Smaller things a new user trips on (issue 11, defect 12): the UI link of `stalwart run` against a dev server
started with `--ui-port`, the workflow summary of runs started by other clients, and what the A2A server answers
right after a cancel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from stalwart.workers.dev_server import free_port

from support.repo_paths import REPO

STALWART = [sys.executable, "-m", "stalwart.client.cli"]


@pytest.mark.slow
def test_new_user_trips_the_ui_link_of_stalwart_run_honours_the_dev_servers_ui_port(tmp_path):
    port, ui_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("TEMPORAL_UI_URL", "TEMPORAL_ADDRESS")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    dev = subprocess.Popen(
        [*STALWART, "dev", "--port", str(port), "--ui-port", str(ui_port), "--data-dir", str(tmp_path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert dev.stdout is not None
        said = []
        for line in dev.stdout:  # the command says when the server and worker are up
            said.append(line)
            if "A worker is running" in line:
                break
        assert dev.poll() is None, "".join(said)
        run = subprocess.run(
            [
                *STALWART,
                "run",
                "--address",
                f"localhost:{port}",
                "--no-follow",
                "agents/calculator.toml",
                "What is (17 * 23) + 4?",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.wait()
    assert run.returncode == 0, run.stderr
    assert f"Temporal UI: http://localhost:{ui_port}/namespaces/default/workflows/calculator-" in run.stdout
    from stalwart.client import connection

    os.environ["XDG_STATE_HOME"], saved = env["XDG_STATE_HOME"], os.environ.get("XDG_STATE_HOME")
    try:
        assert connection.dev_ui_url(f"127.0.0.1:{port}") is None  # forgotten when the dev server stopped
    finally:
        if saved is None:
            del os.environ["XDG_STATE_HOME"]
        else:
            os.environ["XDG_STATE_HOME"] = saved
