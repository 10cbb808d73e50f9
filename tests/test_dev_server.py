"""The embedded dev server (`workers.dev_server`), as tests, benchmarks and `stalwart dev` start it."""

from __future__ import annotations

import asyncio
import socket

import pytest

from stalwart.workers import dev_server
from stalwart.workers.dev_server import DevServer


@pytest.mark.slow
async def test_a_dev_server_on_a_free_port_takes_another_when_its_port_is_taken(monkeypatch):
    with socket.socket() as squatter:  # bound, so nobody else can bind it; not listening, like a client's port
        squatter.bind(("127.0.0.1", 0))
        taken = squatter.getsockname()[1]
        offered = iter([taken])
        really_free = dev_server.free_port
        monkeypatch.setattr(dev_server, "free_port", lambda: next(offered, None) or really_free())
        async with DevServer(port=None, ui_port=None) as server:
            assert server.port != taken
            assert server.process is not None and server.process.poll() is None


def test_a_dev_server_on_a_taken_port_it_was_given_says_so():
    with socket.socket() as squatter:  # bound, so nobody else can bind it; not listening, like a client's port
        squatter.bind(("127.0.0.1", 0))
        taken = squatter.getsockname()[1]
        server = DevServer(port=taken, ui_port=None)
        with pytest.raises(
            dev_server.DevServerExited, match=f"can't set frontend port {taken}.*address already in use"
        ):
            asyncio.run(server.start())
