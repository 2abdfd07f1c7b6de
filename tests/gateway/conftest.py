"""Drive the real ASGI application in process: middleware, routing, consumers, database, channel layer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from channels.testing import ApplicationCommunicator
from django.core.management import call_command

from mcp_platform.asgi import application

ACCEPT_BOTH = "application/json, text/event-stream"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[dict[str, str]]:
        """The SSE events of the body (comments dropped)."""
        events = []
        for block in self.body.decode().split("\n\n"):
            fields: dict[str, str] = {}
            for line in block.splitlines():
                if not line or line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                fields[name] = fields[name] + "\n" + value if name in fields else value
            if fields:
                events.append(fields)
        return events

    def messages(self) -> list[dict[str, Any]]:
        """JSON-RPC messages of the reply, whether JSON or SSE."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            return [json.loads(e["data"]) for e in self.events() if e.get("data")]
        body = self.json()
        return body if isinstance(body, list) else [body]


def http_scope(method: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    """The ASGI scope of a request to ``path`` (which may carry a query string) from a local client."""
    path_only, _, query = path.partition("?")
    return {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "path": path_only,
        "raw_path": path_only.encode(),
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def request(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 5,
    chunk: int | None = None,
) -> Reply:
    """One HTTP request through the whole ASGI stack, read to the end of the response; the body goes in one ASGI
    message, or in messages of ``chunk`` bytes."""
    all_headers = {"host": "127.0.0.1:8000"}
    if body is not None or raw is not None:
        all_headers["content-type"] = "application/json"
        all_headers["accept"] = ACCEPT_BOTH
    all_headers.update(headers or {})
    payload = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    communicator = ApplicationCommunicator(application, http_scope(method, path, all_headers))
    size = chunk or max(len(payload), 1)
    pieces = [payload[at : at + size] for at in range(0, len(payload), size)] or [b""]
    for number, piece in enumerate(pieces, 1):
        await communicator.send_input({"type": "http.request", "body": piece, "more_body": number < len(pieces)})
    start = await communicator.receive_output(timeout)
    assert start["type"] == "http.response.start"
    body_bytes = b""
    while True:
        chunk = await communicator.receive_output(timeout)
        body_bytes += chunk.get("body", b"")
        if not chunk.get("more_body", False):
            break
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(timeout)
    reply_headers = {k.decode().lower(): v.decode() for k, v in start.get("headers", [])}
    return Reply(start["status"], reply_headers, body_bytes)


class OpenStream:
    """A POST whose SSE response is read event by event while the test talks to the server meanwhile."""

    def __init__(self, path: str, body: Any, headers: dict[str, str], timeout: float = 10) -> None:
        all_headers = {"host": "127.0.0.1:8000", "content-type": "application/json", "accept": ACCEPT_BOTH, **headers}
        self.communicator = ApplicationCommunicator(application, http_scope("POST", path, all_headers))
        self.body = json.dumps(body).encode()
        self.timeout = timeout
        self.buffer = ""

    async def open(self) -> tuple[int, dict[str, str]]:
        """Send the request; the response's status and headers."""
        await self.communicator.send_input({"type": "http.request", "body": self.body, "more_body": False})
        start = await self.communicator.receive_output(self.timeout)
        assert start["type"] == "http.response.start"
        return start["status"], {k.decode().lower(): v.decode() for k, v in start.get("headers", [])}

    async def next_message(self) -> dict[str, Any]:
        while True:
            if "\n\n" in self.buffer:
                block, self.buffer = self.buffer.split("\n\n", 1)
                data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
                if data and data[0]:
                    return json.loads("\n".join(data))
                continue
            chunk = await self.communicator.receive_output(self.timeout)
            self.buffer += chunk.get("body", b"").decode()

    async def close(self) -> None:
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(self.timeout)


def rpc(method: str, params: dict[str, Any] | None = None, id: int | str | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


# The 2026-07-28 revision and the ``_meta`` envelope its requests carry in these tests.
V = "2026-07-28"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "gateway-tests", "version": "1.0"},
}

INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"sampling": {}, "elicitation": {}},
    "clientInfo": {"name": "gateway-tests", "version": "1.0"},
}


@pytest.fixture
def conformance(transactional_db: None) -> None:
    """The conformance tenant (``/t/conformance/mcp``) with its catalog."""
    call_command("load_conformance_tenant", verbosity=0)


@pytest.fixture
def tenant(db: None) -> Any:
    from tenants.services import tenant_create

    return tenant_create(slug="acme", name="Acme")
