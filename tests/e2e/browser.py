"""Driving the OAuth pages in Debian's Chromium through Playwright: the browser, a person, an MCP client.

Shared by the browser tests and ``scripts/screenshots``. The client is real: it registers itself (RFC 7591),
listens on a loopback port for the redirect like a native MCP client, exchanges the code with PKCE and
calls the tenant endpoint with the token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import queue
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from tests.e2e.live import LiveServer

CHROMIUM = Path(os.environ.get("MCP_CHROMIUM", "/usr/bin/chromium"))
# Set to 1 to skip the browser tests on a machine that cannot have Chromium; CI never sets it.
SKIP_ENV = "MCP_SKIP_BROWSER_TESTS"
# As root, without a sandbox; and no calls home: this machine's network is closed.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "correct horse battery staple"
ALL_SCOPES = "mcp:tools mcp:resources mcp:prompts"
WAIT_SECONDS = 15.0
HTTP_TIMEOUT = 15.0

# Runs in ``manage.py shell -c``: a workspace that requires authorization and a member (new, or already known).
WORKSPACE_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
tenant = services.tenant_create(slug={slug!r}, name={name!r}, requires_authorization=True)
user, created = get_user_model().objects.get_or_create(username={username!r})
if created:
    user.set_password({password!r})
    user.save()
services.membership_add(tenant=tenant, user=user)
"""


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless, through Playwright (never a browser Playwright downloads)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


@dataclass(frozen=True)
class Workspace:
    slug: str
    name: str
    username: str
    password: str = PASSWORD


def workspace_create(live: LiveServer, *, name: str, slug: str | None = None, username: str | None = None) -> Workspace:
    """A tenant requiring authorization, with a member who signs in with ``PASSWORD``."""
    suffix = secrets.token_hex(3)
    workspace = Workspace(slug=slug or f"ws-{suffix}", name=name, username=username or f"person-{suffix}")
    script = WORKSPACE_SCRIPT.format(
        slug=workspace.slug, name=workspace.name, username=workspace.username, password=workspace.password
    )
    live.manage("shell", "-c", script)
    return workspace


@dataclass
class Callback:
    """What arrived at the client's loopback redirect URI."""

    path: str
    params: dict[str, str]


class _CallbackHandler(BaseHTTPRequestHandler):
    server: _CallbackServer

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/callback":
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            self.server.arrivals.put(Callback(parts.path, params))
            body = b"<!doctype html><html lang=en><title>Connected</title><h1>You can close this window.</h1>"
        else:
            body = self.server.pages.get(parts.path, b"")
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return  # the test output stays readable


class _CallbackServer(ThreadingHTTPServer):
    daemon_threads = True
    arrivals: queue.Queue[Callback]
    pages: dict[str, bytes]


@dataclass
class OAuthClient:
    """A native MCP client: registered through DCR, listening on loopback for the authorization response."""

    live_url: str
    name: str
    listener: _CallbackServer
    client_id: str = ""
    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    state: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.listener.server_address[1]}/callback"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.listener.server_address[1]}"

    def serve_page(self, path: str, html: str) -> str:
        """Serve ``html`` at ``path`` on the client's origin (a page of another site); its URL."""
        self.listener.pages[path] = html.encode()
        return f"{self.origin}{path}"

    def register(self, **metadata: Any) -> dict[str, Any]:
        body = {
            "client_name": self.name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        response = httpx.post(f"{self.live_url}/oauth/register/", json=body, timeout=HTTP_TIMEOUT)
        assert response.status_code == 201, response.text
        registered: dict[str, Any] = response.json()
        self.client_id = registered["client_id"]
        return registered

    def authorize_url(self, resource: str, scope: str = ALL_SCOPES) -> str:
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": scope,
            "state": self.state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": resource,
        }
        return f"{self.live_url}/oauth/authorize/?{urlencode(query)}"

    def callback(self) -> Callback:
        """The authorization response that reached the loopback listener (waits up to ``WAIT_SECONDS``)."""
        try:
            return self.listener.arrivals.get(timeout=WAIT_SECONDS)
        except queue.Empty:
            raise AssertionError(f"nothing arrived at {self.redirect_uri} within {WAIT_SECONDS}s") from None

    def exchange(self, code: str, resource: str) -> dict[str, Any]:
        response = httpx.post(
            f"{self.live_url}/oauth/token/",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "client_id": self.client_id,
                "code_verifier": self.verifier,
                "resource": resource,
            },
            timeout=HTTP_TIMEOUT,
        )
        assert response.status_code == 200, response.text
        tokens: dict[str, Any] = response.json()
        return tokens

    def refresh(self, refresh_token: str, resource: str) -> httpx.Response:
        return httpx.post(
            f"{self.live_url}/oauth/token/",
            data={
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
                "client_id": self.client_id,
                "resource": resource,
            },
            timeout=HTTP_TIMEOUT,
        )


@contextmanager
def oauth_client(live_url: str, name: str) -> Iterator[OAuthClient]:
    """An ``OAuthClient`` whose loopback listener runs for the duration of the block."""
    listener = _CallbackServer(("127.0.0.1", 0), _CallbackHandler)
    listener.arrivals = queue.Queue()
    listener.pages = {}
    thread = threading.Thread(target=listener.serve_forever, name="oauth-callback", daemon=True)
    thread.start()
    try:
        yield OAuthClient(live_url=live_url, name=name, listener=listener)
    finally:
        listener.shutdown()
        listener.server_close()
        thread.join(WAIT_SECONDS)


def mcp_status(endpoint: str, access_token: str) -> int:
    """The HTTP status of an ``initialize`` sent to ``endpoint`` with the token."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "browser-test-client", "version": "1.0"},
        },
    }
    response = httpx.post(
        endpoint,
        content=json.dumps(body),
        headers={
            "authorization": f"Bearer {access_token}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
        timeout=HTTP_TIMEOUT,
    )
    return response.status_code


def sign_in(page: Any, workspace: Workspace) -> None:
    """Fill the sign-in form by its labels and submit it."""
    page.get_by_label("Username").fill(workspace.username)
    page.get_by_label("Password").fill(workspace.password)
    page.get_by_role("button", name="Sign in").click()


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG image, for a logo served from an https host the test stands in for."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def axe_violations(page: Any) -> list[str]:
    """axe-core's findings on the page (WCAG 2.2 A/AA and best practices), one line per rule.

    axe-core ships inside the ``axe-playwright-python`` wheel: no network is needed. It is evaluated through
    the DevTools protocol, which the pages' script-free Content-Security-Policy does not govern.
    """
    from axe_playwright_python.base import AXE_SCRIPT

    # Colours that are still fading in (the admin's links and buttons have 150 ms transitions) would be measured
    # half-way: wait for every transition and animation that ends.
    page.evaluate(
        """() => Promise.all(document.getAnimations()
            .filter(a => a.effect && a.effect.getComputedTiming().endTime !== Infinity)
            .map(a => a.finished.catch(() => null)))"""
    )
    if not page.evaluate("() => typeof window.axe === 'object'"):  # once per document: the script is large
        page.evaluate(AXE_SCRIPT)
    results = page.evaluate(
        """() => axe.run(document, {
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']},
            resultTypes: ['violations'],
        })"""
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}" for v in results["violations"]
    ]
