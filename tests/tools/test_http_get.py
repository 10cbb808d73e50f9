"""The built-in http_get: off until the worker allows hosts, allowlist enforced on every redirect, body capped."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from activity_calls import call

from stalwart.activities.tool_activities import ToolActivities
from stalwart.activities.tools import builtin
from stalwart.activities.tools.registry import ToolContext, ToolRegistry

BIG = b"x" * 5000


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        port = self.server.server_address[1]
        if self.path == "/hello":
            self._send(200, b"hello from 127.0.0.1")
        elif self.path == "/big":
            self._send(200, BIG)
        elif self.path == "/to-hello":
            self._redirect("/hello")
        elif self.path == "/to-localhost":
            self._redirect(f"http://localhost:{port}/hello")
        else:
            self._send(404, b"not found")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def _get(url: str) -> dict:
    activities = ToolActivities(ToolRegistry([builtin.http_get]))
    result = await call(activities, builtin.http_get.spec(), {"url": url})
    return json.loads(result.text) | {"is_error": result.is_error}


async def test_http_get_is_off_until_the_worker_allows_hosts(site, monkeypatch):
    monkeypatch.delenv(builtin.HTTP_HOSTS_ENV, raising=False)
    answer = await _get(f"{site}/hello")
    assert answer["is_error"]
    assert "http_get is off on this worker; set STALWART_HTTP_ALLOWED_HOSTS" in answer["error"]


async def test_http_get_refuses_a_host_that_is_not_allowed(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "example.org")
    answer = await _get(f"{site}/hello")
    assert answer["is_error"]
    assert "host 127.0.0.1 is not allowed; add it to STALWART_HTTP_ALLOWED_HOSTS" in answer["error"]


async def test_http_get_fetches_from_an_allowed_host(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "example.org, 127.0.0.1")
    answer = await _get(f"{site}/hello")
    assert (answer["status"], answer["content"], answer["truncated"]) == (200, "hello from 127.0.0.1", False)


async def test_http_get_follows_a_redirect_within_allowed_hosts(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "127.0.0.1")
    answer = await _get(f"{site}/to-hello")
    assert (answer["url"], answer["content"]) == (f"{site}/hello", "hello from 127.0.0.1")


async def test_http_get_refuses_a_redirect_to_a_host_that_is_not_allowed(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "127.0.0.1")
    answer = await _get(f"{site}/to-localhost")
    assert answer["is_error"]
    assert "redirected to host localhost is not allowed" in answer["error"]


async def test_http_get_caps_the_body_at_the_worker_limit(site):
    capped = builtin.http_get_tool(("127.0.0.1",), max_bytes=100)
    answer = json.loads(await capped({"url": f"{site}/big"}, ToolContext(idempotency_key="k", call_id="c")))
    assert (len(answer["content"]), answer["truncated"]) == (100, True)


async def _get_with(capped, url: str) -> dict:
    return json.loads(await capped({"url": url}, ToolContext(idempotency_key="k", call_id="c")))


async def test_http_get_caps_the_body_at_the_worker_limit_with_hosts_from_the_environment(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "127.0.0.1")
    monkeypatch.delenv(builtin.HTTP_MAX_BYTES_ENV, raising=False)
    answer = await _get_with(builtin.http_get_tool(max_bytes=100), f"{site}/big")
    assert (len(answer["content"]), answer["truncated"]) == (100, True)


async def test_http_get_given_hosts_and_limit_does_not_read_the_environment(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "example.org")
    monkeypatch.setenv(builtin.HTTP_MAX_BYTES_ENV, "not-a-number")
    answer = await _get_with(builtin.http_get_tool(("127.0.0.1",), max_bytes=100), f"{site}/big")
    assert (len(answer["content"]), answer["truncated"]) == (100, True)


async def test_http_get_caps_the_body_at_the_environment_limit(site, monkeypatch):
    monkeypatch.setenv(builtin.HTTP_HOSTS_ENV, "127.0.0.1")
    monkeypatch.setenv(builtin.HTTP_MAX_BYTES_ENV, "50")
    answer = await _get(f"{site}/big")
    assert (len(answer["content"]), answer["truncated"]) == (50, True)
    hosts_given = await _get_with(builtin.http_get_tool(("127.0.0.1",)), f"{site}/big")
    assert (len(hosts_given["content"]), hosts_given["truncated"]) == (50, True)


def test_http_get_refuses_a_limit_below_one_byte():
    with pytest.raises(ValueError, match="max_bytes must be at least 1"):
        builtin.http_get_tool(("127.0.0.1",), max_bytes=0)
