"""ASGI middleware in front of every path: header size (431), one ``Host`` (400), a deadline on the request body
(408), and a refused body read to its end before the refusal goes out, so the client can read it.

The servers differ in what they bound themselves (``mcp_infra.serving.servers``); this layer holds on all of them. A
response started while the request body is still arriving (a 413, 401 or 404 sent before the body was read) is
held until the rest of the body is read and discarded, up to ``DRAIN_FACTOR`` times ``MAX_REQUEST_BYTES`` and the
body deadline: a server that closes a connection with unread data in its buffer resets it, and the client loses
the answer. Such responses close the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from mcp_core import jsonrpc
from mcp_infra.conf import platform_settings
from mcp_platform.gateway.responses import send_json

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# A body refused before it was read is read and discarded up to this many times MAX_REQUEST_BYTES; beyond, the
# refusal goes out at once and the server closes the connection gracefully (uvicorn: ``uvicorn_protocol``'s
# lingering close) or, where it cannot, under the client.
DRAIN_FACTOR = 4
CLOSE: tuple[bytes, bytes] = (b"connection", b"close")
DISCONNECT: Message = {"type": "http.disconnect"}


class Head(NamedTuple):
    """What the limits need from a request's head, read in one pass over its headers."""

    size: int  # the request target and header fields as they came on the wire (``name: value`` + CRLF)
    hosts: int
    declared_length: int | None  # ``Content-Length``; None when absent or unreadable
    body_expected: bool  # a chunked body, or a ``Content-Length`` other than 0

    @classmethod
    def of(cls, scope: Scope) -> Head:
        headers = scope.get("headers", [])
        names = [name for name, _ in headers]
        size = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b""))
        size += 4 * len(headers) + sum(map(len, names)) + sum(len(value) for _, value in headers)
        length: int | None = None
        has_length = b"content-length" in names
        if has_length:
            value = headers[names.index(b"content-length")][1]
            length = int(value) if value.isdigit() else None
        chunked = b"transfer-encoding" in names
        return cls(size, names.count(b"host"), length, chunked or (has_length and length != 0))

    def refusal(self) -> tuple[int, str] | None:
        """Status and message for a request refused on its head alone, or None."""
        limit = platform_settings.MAX_HEADER_BYTES
        if self.size > limit:
            return 431, f"Request Header Fields Too Large: the limit is {limit} bytes"
        if self.hosts > 1:
            return 400, "Bad Request: more than one Host header"
        return None


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
        self._loop = asyncio.get_running_loop()
        self._deadline = self._loop.time() + timeout
        self._receiving = False
        self._expired = False

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
        """The next message, or None once the deadline has passed.

        A bare timer that cancels this task, as ``asyncio.timeout_at`` does underneath: on every request's path its
        context manager cost more than twice the timer (8.8 against 3.7 us here), and ``wait_for`` a task more."""
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        timer = self._loop.call_at(self._deadline, self._expire, task)
        self._receiving = True
        try:
            message = await self._receive()
        except asyncio.CancelledError:
            # Ours only when the timer fired and no one else cancelled the task meanwhile.
            if self._expired and task.uncancel() <= cancelling:
                return None
            raise
        finally:
            self._receiving = False
            timer.cancel()
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.complete = True
        return message

    def _expire(self, task: asyncio.Task[Any]) -> None:
        self._expired = True
        task.cancel()

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
        head = Head.of(scope)
        body = RequestBody(receive, send, expected=head.body_expected, timeout=platform_settings.BODY_TIMEOUT)
        drain_limit = DRAIN_FACTOR * platform_settings.MAX_REQUEST_BYTES

        async def send_after_body(message: Message) -> None:
            if body.answered:
                return
            if message["type"] == "http.response.start" and not body.complete:
                declared = head.declared_length
                if declared is None or declared <= drain_limit:
                    await body.drain(drain_limit)
                headers = message.get("headers", [])
                if CLOSE not in headers:
                    message = {**message, "headers": [*headers, CLOSE]}
            await send(message)

        refusal = head.refusal()
        if refusal is not None:
            status, text = refusal
            error = jsonrpc.encode_error(None, {"code": -32000, "message": text})
            await send_json(send_after_body, status, error, headers=[CLOSE])
            return
        await self.app(scope, body.receive, send_after_body)
