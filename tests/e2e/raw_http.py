"""Raw Streamable HTTP for the end-to-end tests that must see the wire: SSE events, ids, status codes.

The SDK hides dropped streams and reconnections; these helpers do nothing behind the test's back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

PROTOCOL_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
ACCEPT_BOTH = "application/json, text/event-stream"
CLIENT_INFO = {"name": "e2e-raw-client", "version": "1.0.0"}

JSONObject = dict[str, Any]


@dataclass(frozen=True)
class SseEvent:
    """One dispatched SSE event (comments and keep-alives are not events)."""

    id: str | None
    event: str
    data: str
    retry: int | None

    def message(self) -> JSONObject | None:
        """The JSON-RPC message the event carries; None for a priming event (empty data)."""
        return json.loads(self.data) if self.data else None


async def sse_events(response: httpx.Response) -> AsyncIterator[SseEvent]:
    """The events of a streaming ``text/event-stream`` response, as the SSE spec frames them."""
    event_id: str | None = None
    name = ""
    data: list[str] = []
    retry: int | None = None
    seen = False
    async for line in response.aiter_lines():
        if line == "":
            if seen:
                yield SseEvent(id=event_id, event=name or "message", data="\n".join(data), retry=retry)
            event_id, name, data, retry, seen = None, "", [], None, False
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "id":
            event_id, seen = value, True
        elif field == "event":
            name, seen = value, True
        elif field == "data":
            data.append(value)
            seen = True
        elif field == "retry" and value.isdigit():
            retry, seen = int(value), True


def parse_sse_body(body: str) -> list[SseEvent]:
    """The events of a fully read SSE body."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            fields.setdefault(field, []).append(value.removeprefix(" "))
        if fields:
            retry = fields.get("retry", [""])[-1]
            events.append(
                SseEvent(
                    id=fields.get("id", [None])[-1],
                    event=fields.get("event", ["message"])[-1],
                    data="\n".join(fields.get("data", [])),
                    retry=int(retry) if retry.isdigit() else None,
                )
            )
    return events


def body_messages(response: httpx.Response) -> list[JSONObject]:
    """The JSON-RPC messages of a fully read POST response, JSON or SSE."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [m for m in (e.message() for e in parse_sse_body(response.text)) if m is not None]
    body = response.json()
    return body if isinstance(body, list) else [body]


def request_message(request_id: int | str, method: str, params: JSONObject | None = None) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def stateless_request(
    request_id: int | str, method: str, params: JSONObject | None = None, *, capabilities: JSONObject | None = None
) -> JSONObject:
    """A 2026-07-28 request: no session; the client's version, capabilities and info travel in ``params._meta``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    return request_message(request_id, method, {**(params or {}), "_meta": meta})


def stateless_headers(method: str, name: str | None = None) -> dict[str, str]:
    """The HTTP headers a 2026-07-28 request mirrors: its version, its method and the tool, prompt or task it names."""
    headers = {"Accept": ACCEPT_BOTH, "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


class RawSession:
    """A handshake-era session spoken by hand over Streamable HTTP."""

    def __init__(self, http: httpx.AsyncClient, url: str, version: str = PROTOCOL_VERSION) -> None:
        self.http = http
        self.url = url
        self.version = version
        self.session_id: str | None = None
        self._last_id = 0

    def next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    def headers(self, *, accept: str = ACCEPT_BOTH, **extra: str) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json"}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = self.version
        headers.update(extra)
        return headers

    def joined(self, url: str) -> RawSession:
        """The same session, spoken to ``url`` (another web process)."""
        other = RawSession(self.http, url, self.version)
        other.session_id = self.session_id
        return other

    async def initialize(self, capabilities: JSONObject | None = None) -> JSONObject:
        """``initialize`` then ``notifications/initialized``; the initialize result."""
        params = {"protocolVersion": self.version, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}
        request_id = self.next_id()
        response = await self.http.post(
            self.url, json=request_message(request_id, "initialize", params), headers=self.headers()
        )
        assert response.status_code == 200, response.text
        session_id = response.headers.get("mcp-session-id")
        assert session_id, f"initialize answered without Mcp-Session-Id: {dict(response.headers)}"
        self.session_id = session_id
        (answer,) = [m for m in body_messages(response) if m.get("id") == request_id]
        assert "result" in answer, answer
        initialized = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status_code == 202, initialized.text
        return answer["result"]

    async def post(self, message: JSONObject, **extra_headers: str) -> httpx.Response:
        """POST one message and read the whole response."""
        return await self.http.post(self.url, json=message, headers=self.headers(**extra_headers))

    async def call(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return its JSON-RPC response message (result or error)."""
        request_id = self.next_id()
        response = await self.post(request_message(request_id, method, params))
        assert response.status_code == 200, f"{method}: HTTP {response.status_code} {response.text}"
        answers = [m for m in body_messages(response) if m.get("id") == request_id and "method" not in m]
        assert len(answers) == 1, f"{method}: expected one response, got {body_messages(response)}"
        return answers[0]

    def stream_post(self, message: JSONObject) -> Any:
        """``async with`` a streaming POST of ``message``."""
        return self.http.stream("POST", self.url, json=message, headers=self.headers())

    def stream_get(self, last_event_id: str | None = None) -> Any:
        """``async with`` a streaming GET (the standalone stream, or a resumption with ``Last-Event-ID``)."""
        extra = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
        headers = self.headers(accept="text/event-stream", **extra)
        del headers["Content-Type"]
        return self.http.stream("GET", self.url, headers=headers)


def raw_http_client() -> httpx.AsyncClient:
    """An httpx client whose reads wait long enough for slow tools but never forever."""
    return httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=30.0))


async def messages(events: AsyncIterator[SseEvent]) -> AsyncIterator[JSONObject]:
    """The JSON-RPC messages of a stream's events, skipping priming events."""
    async for event in events:
        message = event.message()
        if message is not None:
            yield message


async def next_message(events: AsyncIterator[SseEvent]) -> JSONObject:
    """The next JSON-RPC message on a stream, skipping priming events."""
    async for event in events:
        message = event.message()
        if message is not None:
            return message
    raise AssertionError("the stream ended without a message")


def is_progress(message: JSONObject | None) -> bool:
    return message is not None and message.get("method") == "notifications/progress"


async def post_until_first_progress(session: RawSession, call: JSONObject) -> list[SseEvent]:
    """POST ``call`` and drop the connection right after its first progress notification; the events seen."""
    seen: list[SseEvent] = []
    async with session.stream_post(call) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for event in sse_events(response):
            seen.append(event)
            if is_progress(event.message()):
                return seen
    raise AssertionError(f"the stream ended before any progress notification: {seen}")


async def resume_until_response(session: RawSession, last_event_id: str, request_id: int | str) -> list[SseEvent]:
    """GET with ``Last-Event-ID`` and read until the response to ``request_id``; the events seen."""
    seen: list[SseEvent] = []
    async with session.stream_get(last_event_id=last_event_id) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for event in sse_events(response):
            seen.append(event)
            message = event.message()
            if message is not None and message.get("id") == request_id and "method" not in message:
                return seen
    raise AssertionError(f"the resumed stream ended before the response: {seen}")
