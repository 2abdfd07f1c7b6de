"""Fixtures for the connections tests: the platform itself (its ASGI application under uvicorn, in a thread, on the
test database) as a real upstream authorization server and protected resource, and a scripted HTTP server that
answers whatever a test tells it to (a hostile or broken upstream)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import uvicorn
from django.core.cache import cache

from mcp_platform.asgi import application
from tests.factories import MembershipFactory, TenantFactory, UserFactory
from tests.loopback_http import serving

STARTUP_SECONDS = 10.0
PASSWORD = "correct horse battery staple"  # UserFactory's


@dataclass
class Platform:
    base: str
    tenant: Any = None
    member: Any = None

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/t/acme/mcp"


@pytest.fixture(scope="module")
def platform_base() -> Iterator[str]:
    """The platform's ASGI application served on a loopback port, in a thread of this process, so that it uses the
    test database (pytest-django's ``live_server`` serves WSGI only: the MCP endpoints are ASGI routes)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, lifespan="off", log_level="warning", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="platform-asgi", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_SECONDS
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the platform did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STARTUP_SECONDS)
        listener.close()


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    """The outbound door may reach loopback (where the test servers are), as a developer's machine allows it."""
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


@pytest.fixture
def platform(platform_base: str, transactional_db: None, loopback_allowed: None) -> Platform:
    """The served platform with a tenant that requires authorization and a member of it. The database is
    transactional: the server's threads write (registrations, grants, tokens) while the test reads."""
    cache.clear()  # registrations are rate-limited per address in the cache
    tenant = TenantFactory(slug="acme", name="Acme", requires_authorization=True)
    member = UserFactory(username="alice")
    MembershipFactory(user=member, tenant=tenant)
    return Platform(platform_base, tenant, member)


# ---- a scripted upstream -------------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    # Seconds to wait before answering (an upstream that keeps the platform waiting).
    delay: float = 0.0


class ScriptedServer(ThreadingHTTPServer):
    """Answers each path with the ``Reply`` in ``routes`` (404 for others), and records what reached it."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.routes: dict[str, Reply] = {}
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def log_message(self, format: str, *args: object) -> None:  # the tests read ``requests``, not logs
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or "0"))
        self.server.requests.append((self.command, self.path, dict(self.headers.items()), body))
        reply = self.server.routes.get(self.path.partition("?")[0], Reply(404, b'{"error": "not found"}'))
        if reply.delay:
            time.sleep(reply.delay)
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first, as it should
            pass

    do_GET = do_POST = _answer


@pytest.fixture
def upstream() -> Iterator[ScriptedServer]:
    with serving(ScriptedServer(), "scripted-upstream") as server:
        yield server
