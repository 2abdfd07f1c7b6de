"""MCP requests as prebuilt bytes for both protocol eras: what the load generator sends, and session set-up.

Handshake era: ``initialize`` + ``notifications/initialized`` once, then ``Mcp-Session-Id`` and
``MCP-Protocol-Version: 2025-11-25`` on every request. Stateless era (2026-07-28): ``_meta`` in every request
plus the mirrored ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers. Every request gets a unique
JSON-RPC id: servers that track in-flight ids misbehave on duplicates within a session.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from bench.http_client import HttpConnection, Response, build_request
from mcp_core.standard_headers import NAME_SOURCES

HANDSHAKE = "handshake"
STATELESS = "stateless"
ERAS = (HANDSHAKE, STATELESS)
HANDSHAKE_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "mcp-bench", "version": "1.0"}
ACCEPT_BOTH = "application/json, text/event-stream"

JSONObject = dict[str, Any]
_ids = itertools.count(1)


class McpFailure(Exception):
    """A response that is not what the workload expects (status, JSON-RPC error, tool error)."""


@dataclass(frozen=True)
class Target:
    """One MCP endpoint: ``http://host:port/path``."""

    host: str
    port: int
    path: str

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Prepared:
    """A request whose only varying parts are its id and therefore its Content-Length."""

    head: bytes
    body_prefix: bytes
    body_suffix: bytes

    def render(self, request_id: int) -> bytes:
        body = self.body_prefix + str(request_id).encode() + self.body_suffix
        return self.head + str(len(body)).encode() + b"\r\n\r\n" + body


def envelope(
    era: str,
    method: str,
    params: JSONObject | None = None,
    *,
    session_id: str | None = None,
    progress_token: str | None = None,
    capabilities: JSONObject | None = None,
) -> tuple[list[tuple[str, str]], str]:
    """The headers and the JSON of ``{"method", "params"}`` for one request of ``era`` (a stateless request
    declares ``capabilities``, none by default)."""
    params = dict(params or {})
    headers = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH)]
    meta: JSONObject = {}
    if progress_token is not None:
        meta["progressToken"] = progress_token
    if era == STATELESS:
        meta["io.modelcontextprotocol/protocolVersion"] = STATELESS_VERSION
        meta["io.modelcontextprotocol/clientCapabilities"] = capabilities or {}
        meta["io.modelcontextprotocol/clientInfo"] = CLIENT_INFO
        headers += [("MCP-Protocol-Version", STATELESS_VERSION), ("Mcp-Method", method)]
        if method in NAME_SOURCES:
            headers.append(("Mcp-Name", str(params[NAME_SOURCES[method]])))
    elif session_id is not None:
        headers += [("MCP-Protocol-Version", HANDSHAKE_VERSION), ("Mcp-Session-Id", session_id)]
    if meta:
        params["_meta"] = meta
    return headers, json.dumps({"method": method, "params": params}, separators=(",", ":"))


def next_id() -> int:
    return next(_ids)


def _head(target: Target, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"POST {target.path} HTTP/1.1", f"Host: {target.authority}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")


class McpSession:
    """Speaks one era to one endpoint over one connection (a handshake session when the era needs one)."""

    def __init__(self, connection: HttpConnection, target: Target, era: str) -> None:
        if era not in ERAS:
            raise ValueError(f"unknown era {era!r}")
        self.connection = connection
        self.target = target
        self.era = era
        self.session_id: str | None = None

    @classmethod
    async def open(cls, target: Target, era: str, *, handshake: bool = True) -> McpSession:
        session = cls(await HttpConnection.open(target.host, target.port), target, era)
        if era == HANDSHAKE and handshake:
            await session.initialize()
        return session

    def close(self) -> None:
        self.connection.close()

    def prepare(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        progress_token: str | None = None,
        capabilities: JSONObject | None = None,
    ) -> Prepared:
        headers, rest = envelope(
            self.era,
            method,
            params,
            session_id=self.session_id,
            progress_token=progress_token,
            capabilities=capabilities,
        )
        return Prepared(_head(self.target, headers), b'{"jsonrpc":"2.0","id":', b"," + rest[1:].encode())

    async def send(self, prepared: Prepared) -> Response:
        return await self.connection.request(prepared.render(next_id()))

    async def call(
        self, method: str, params: JSONObject | None = None, *, capabilities: JSONObject | None = None
    ) -> JSONObject:
        """One request; its ``result``. Raises ``McpFailure`` for anything else."""
        response = await self.send(self.prepare(method, params, capabilities=capabilities))
        return result_of(response)

    async def initialize(self) -> str:
        """``initialize`` then ``notifications/initialized``; the session id."""
        response = await self.send(
            self.prepare(
                "initialize",
                {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
            )
        )
        result_of(response)
        session_id = response.headers.get("mcp-session-id")
        if not session_id:
            raise McpFailure("initialize answered without an Mcp-Session-Id")
        self.session_id = session_id
        await self.notify("notifications/initialized")
        return session_id

    async def notify(self, method: str) -> None:
        headers = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH)]
        if self.session_id is not None:
            headers += [("MCP-Protocol-Version", HANDSHAKE_VERSION), ("Mcp-Session-Id", self.session_id)]
        body = json.dumps({"jsonrpc": "2.0", "method": method}).encode()
        response = await self.connection.request(
            build_request("POST", self.target.authority, self.target.path, headers, body)
        )
        if response.status != 202:
            raise McpFailure(f"{method} answered {response.status}: {response.body[:200]!r}")

    async def end(self) -> None:
        """DELETE the handshake session."""
        assert self.session_id is not None
        headers = [("MCP-Protocol-Version", HANDSHAKE_VERSION), ("Mcp-Session-Id", self.session_id)]
        response = await self.connection.request(
            build_request("DELETE", self.target.authority, self.target.path, headers)
        )
        if response.status not in (200, 202, 204):
            raise McpFailure(f"DELETE answered {response.status}")
        self.session_id = None

    def stream_request(self) -> bytes:
        """The handshake session's standalone GET stream."""
        assert self.session_id is not None
        headers = [
            ("Accept", "text/event-stream"),
            ("MCP-Protocol-Version", HANDSHAKE_VERSION),
            ("Mcp-Session-Id", self.session_id),
        ]
        return build_request("GET", self.target.authority, self.target.path, headers)


def result_of(response: Response) -> JSONObject:
    """The JSON-RPC result of a JSON or SSE response. Raises ``McpFailure``."""
    if response.status != 200:
        raise McpFailure(f"HTTP {response.status}: {response.body[:200]!r}")
    for message in messages_of(response):
        if "result" in message:
            result: JSONObject = message["result"]
            if result.get("isError"):
                raise McpFailure(f"tool error: {json.dumps(result)[:200]}")
            return result
        if "error" in message:
            raise McpFailure(f"JSON-RPC error: {message['error']}")
    raise McpFailure(f"no result in {response.body[:200]!r}")


def messages_of(response: Response) -> list[JSONObject]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(data) for data in sse_data(response.body) if data]
    return [json.loads(response.body)]


def sse_data(body: bytes) -> list[str]:
    """The ``data`` of each event in a complete SSE body."""
    events = []
    for block in body.decode().replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if lines:
            events.append("\n".join(lines))
    return events
