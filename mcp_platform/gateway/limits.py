"""ASGI middleware in front of every path: header size (431), one ``Host`` (400), a deadline on the request body
(408), and a refused body read to its end before the refusal goes out, so the client can read it.

The servers differ in what they bound themselves (``mcp_platform.servers``); this layer holds on all of them. A
response started while the request body is still arriving (a 413, 401 or 404 sent before the body was read) is
held until the rest of the body is read and discarded, up to ``DRAIN_FACTOR`` times ``MAX_REQUEST_BYTES`` and the
body deadline: a server that closes a connection with unread data in its buffer resets it, and the client loses
the answer. Such responses close the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_core import jsonrpc
from mcp_platform.conf import platform_settings
from mcp_platform.gateway.responses import send_json

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# A body refused before it was read is read and discarded up to this many times MAX_REQUEST_BYTES; beyond, the
# refusal goes out at once and the connection closes under the client.
DRAIN_FACTOR = 4
CLOSE: tuple[bytes, bytes] = (b"connection", b"close")
DISCONNECT: Message = {"type": "http.disconnect"}


def header_bytes(scope: Scope) -> int:
    """The size of the request target and header fields as they came on the wire (``name: value`` + CRLF)."""
    target = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b""))
    return target + sum(len(name) + len(value) + 4 for name, value in scope.get("headers", []))


def header_refusal(scope: Scope) -> tuple[int, str] | None:
    """Status and message for a request refused on its headers alone, or None."""
    limit = platform_settings.MAX_HEADER_BYTES
    if header_bytes(scope) > limit:
        return 431, f"Request Header Fields Too Large: the limit is {limit} bytes"
    if sum(1 for name, _ in scope.get("headers", []) if name == b"host") > 1:
        return 400, "Bad Request: more than one Host header"
    return None


def declared_length(scope: Scope) -> int | None:
    """The ``Content-Length`` the client declared; None when absent or unreadable."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def body_expected(scope: Scope) -> bool:
    """Whether the request has a body to read: a chunked one, or a ``Content-Length`` other than 0."""
    names = {name for name, _ in scope.get("headers", [])}
    if b"transfer-encoding" in names:
        return True
    return b"content-length" in names and declared_length(scope) != 0


class RequestBody:
    """The request's ``receive`` with the body under a deadline; reads and discards what is left of it on demand.

    Once the deadline passes with the body incomplete, the client is answered 408 (connection closed) and the
    application sees ``http.disconnect``.
    """

    def __init__(self, receive: Receive, send: Send, *, expected: bool, timeout: float) -> None:
        self._receive = receive
        self._send = send
        self.complete = not expected
        self.answered = False
        self._deadline = asyncio.get_running_loop().time() + timeout
        self._receiving = False

    async def receive(self) -> Message:
        if self.answered:
            return DISCONNECT
        if self.complete:
            return await self._receive()
        message = await self._read_before_deadline()
        if message is None:
            await self.time_out()
            return DISCONNECT
        return message

    async def _read_before_deadline(self) -> Message | None:
        """The next message, or None once the deadline has passed."""
        remaining = self._deadline - asyncio.get_running_loop().time()
        self._receiving = True
        try:
            message = await asyncio.wait_for(self._receive(), max(remaining, 0.0))
        except TimeoutError:
            return None
        finally:
            self._receiving = False
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.complete = True
        return message

    async def time_out(self) -> None:
        self.answered = True
        self.complete = True
        timeout = platform_settings.BODY_TIMEOUT
        message = f"Request Timeout: send the body within {timeout} s"
        await send_json(self._send, 408, jsonrpc.encode_error(None, {"code": -32000, "message": message}), [CLOSE])

    async def drain(self, limit: int) -> None:
        """Read and discard the rest of the body, up to ``limit`` bytes and the deadline.

        Not while the application itself waits on ``receive``: two readers would split the messages.
        """
        seen = 0
        while not self._receiving and not self.complete and seen <= limit:
            message = await self._read_before_deadline()
            if message is None:
                return
            seen += len(message.get("body", b""))


class RequestLimitsMiddleware:
    """Outermost ASGI middleware: see the module docstring."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = RequestBody(receive, send, expected=body_expected(scope), timeout=platform_settings.BODY_TIMEOUT)
        drain_limit = DRAIN_FACTOR * platform_settings.MAX_REQUEST_BYTES

        async def send_after_body(message: Message) -> None:
            if body.answered:
                return
            if message["type"] == "http.response.start" and not body.complete:
                declared = declared_length(scope)
                if declared is None or declared <= drain_limit:
                    await body.drain(drain_limit)
                headers = message.get("headers", [])
                if CLOSE not in headers:
                    message = {**message, "headers": [*headers, CLOSE]}
            await send(message)

        refusal = header_refusal(scope)
        if refusal is not None:
            status, text = refusal
            error = jsonrpc.encode_error(None, {"code": -32000, "message": text})
            await send_json(send_after_body, status, error, headers=[CLOSE])
            return
        await self.app(scope, body.receive, send_after_body)
