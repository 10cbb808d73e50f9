"""Real MCP servers for the tests: the demo server as a stdio subprocess,
or over streamable HTTP in a uvicorn thread."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from mcp_demo_server import build_server

from stalwart.contracts.agent import McpHttpServer, McpStdioServer

DEMO_SCRIPT = Path(__file__).with_name("mcp_demo_server.py")


def stdio_demo(name: str = "demo", tools: list[str] | None = None) -> McpStdioServer:
    """The demo server as the worker's own interpreter running the script: a real subprocess over stdio."""
    return McpStdioServer(name=name, command=sys.executable, args=[str(DEMO_SCRIPT)], tools=tools)


@contextmanager
def http_demo_url() -> Iterator[str]:
    """Serve the demo server over streamable HTTP on a free port of 127.0.0.1; yields its MCP endpoint."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build_server().streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the MCP HTTP test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def http_demo(url: str, name: str = "web", headers: dict[str, str] | None = None) -> McpHttpServer:
    return McpHttpServer(name=name, url=url, headers=headers or {})
