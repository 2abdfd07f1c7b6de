"""A small real HTTP server on a loopback address, in a thread, that records what reached it.

Routes: ``/hello`` (JSON naming the Host header it got), ``/redirect?to=URL`` (302 there), ``/loop`` (302 to
itself), ``/bytes?n=N`` (N bytes), ``/repeated`` (``X-Tag`` twice and ``Set-Cookie`` twice), ``/bearer`` (the bearer
token it was sent, as httpbin.org's ``/bearer`` answers; 401 without one); POST answers the same after reading its
body (kept in ``bodies``).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar
from urllib.parse import parse_qs, urlsplit

BEARER = "Bearer "
Server = TypeVar("Server", bound=ThreadingHTTPServer)


def httpbin_json(value: object) -> bytes:
    """``value`` as httpbin.org writes its JSON answers (Flask's pretty-printed ``jsonify``, and a newline)."""
    return (json.dumps(value, indent=2, separators=(", ", ": "), sort_keys=True) + "\n").encode()


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str) -> None:
        super().__init__((host, 0), _Handler)
        self.hits: Counter[str] = Counter()
        self.hosts: list[str] = []
        self.bodies: list[bytes] = []

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def log_message(self, format: str, *args: object) -> None:  # quiet: the tests read hits, not logs
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | list[tuple[str, str]] | None = None) -> None:
        self.send_response(status)
        lines = headers.items() if isinstance(headers, dict) else headers or [("Content-Type", "application/json")]
        for name, value in lines:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        self.server.hits[parts.path] += 1
        self.server.hosts.append(self.headers.get("Host", ""))
        if parts.path == "/hello":
            self._send(200, json.dumps({"host": self.headers.get("Host")}).encode())
        elif parts.path == "/redirect":
            self._send(302, b"", {"Location": query["to"][0]})
        elif parts.path == "/loop":
            self._send(302, b"", {"Location": "/loop"})
        elif parts.path == "/repeated":
            repeated = [("Content-Type", "application/json"), ("X-Tag", "first"), ("X-Tag", "second")]
            self._send(200, b"{}", [*repeated, ("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2; Path=/")])
        elif parts.path == "/bearer":
            authorization = self.headers.get("Authorization", "")
            if authorization.startswith(BEARER):
                token = authorization[len(BEARER) :]
                self._send(200, httpbin_json({"authenticated": True, "token": token}))
            else:
                self._send(401, b"", {"WWW-Authenticate": "Bearer"})
        elif parts.path == "/bytes":
            self._send(200, b"x" * int(query["n"][0]), {"Content-Type": "application/octet-stream"})
        else:
            self._send(404, b"{}")

    def do_POST(self) -> None:
        self.server.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.do_GET()


@contextmanager
def serving(server: Server, name: str) -> Iterator[Server]:
    """``server`` answering in a thread named ``name`` until the block ends; then shut down and closed."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def loopback_server(host: str = "127.0.0.1") -> Iterator[LoopbackServer]:
    with serving(LoopbackServer(host), f"loopback-http-{host}") as server:
        yield server
