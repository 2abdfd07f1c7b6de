"""A minimal HTTP/1.1 keep-alive client on asyncio protocols: the load generator's wire.

General clients (httpx) spend more CPU per request than the servers under test; this one sends prebuilt
request bytes and parses only what it must (status, headers, Content-Length or chunked bodies), and can hand
each body chunk to a callback as it arrives, which the SSE measurements need.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

ChunkCallback = Callable[[bytes], None]


class ProtocolError(Exception):
    """The server sent something this client does not parse, or closed the connection mid-response."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


def build_request(method: str, host: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class HttpConnection(asyncio.Protocol):
    """One keep-alive connection with at most one request in flight."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._response: asyncio.Future[Response] | None = None
        self._head: asyncio.Future[Response] | None = None
        self._on_chunk: ChunkCallback | None = None
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body = bytearray()
        self._framing = ""  # "", "length", "chunked", "close"
        self._remaining = 0
        self._chunk_size = -1
        self.closed = False

    @classmethod
    async def open(cls, host: str, port: int) -> HttpConnection:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(cls, host, port)
        return protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's transports (used when uvloop is installed) do not subclass
        # asyncio.Transport, though they write and close alike.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._framing == "close" and self._response is not None:
            self._finish()
            return
        for waiter in (self._head, self._response):
            if waiter is not None and not waiter.done():
                waiter.set_exception(ProtocolError(f"connection closed mid-response ({exc})"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def request(self, data: bytes, on_chunk: ChunkCallback | None = None) -> asyncio.Future[Response]:
        """Send ``data`` (a whole request); the future resolves with the whole response."""
        if self.closed or self.transport is None:
            raise ProtocolError("connection is closed")
        if self._response is not None:
            raise ProtocolError("a request is already in flight on this connection")
        loop = asyncio.get_running_loop()
        self._response = loop.create_future()
        self._head = loop.create_future()
        self._on_chunk = on_chunk
        self.transport.write(data)
        return self._response

    def head(self) -> asyncio.Future[Response]:
        """The current response's status and headers, as soon as they arrive (for streams that stay open)."""
        assert self._head is not None, "no request in flight"
        return self._head

    # ---- parsing -----------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            self._parse()
        except Exception as exc:  # a malformed response, or the chunk callback failing on one
            for waiter in (self._head, self._response):
                if waiter is not None and not waiter.done():
                    waiter.set_exception(exc)
            self.close()

    def _parse(self) -> None:
        while self._response is not None:
            if not self._framing:
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                self._parse_head(bytes(self._buffer[:end]))
                del self._buffer[: end + 4]
                continue
            if self._framing == "length":
                if len(self._buffer) < self._remaining:
                    return
                self._emit(bytes(self._buffer[: self._remaining]))
                del self._buffer[: self._remaining]
                self._finish()
            elif self._framing == "chunked":
                if not self._parse_chunk():
                    return
            else:  # until the server closes the connection
                self._emit(bytes(self._buffer))
                self._buffer.clear()
                return

    def _parse_head(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0]!r}")
        self._status = int(parts[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self._headers = headers
        self._body = bytearray()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._framing, self._chunk_size = "chunked", -1
        elif "content-length" in headers:
            self._framing, self._remaining = "length", int(headers["content-length"])
        elif self._status in (204, 304) or 100 <= self._status < 200:
            self._framing, self._remaining = "length", 0
        else:
            self._framing = "close"
        if self._head is not None and not self._head.done():
            self._head.set_result(Response(self._status, headers, b""))

    def _parse_chunk(self) -> bool:
        """Consume one chunk-size line or chunk; False when more bytes are needed."""
        if self._chunk_size < 0:
            end = self._buffer.find(b"\r\n")
            if end < 0:
                return False
            self._chunk_size = int(bytes(self._buffer[:end]).split(b";", 1)[0], 16)
            del self._buffer[: end + 2]
            return True
        if self._chunk_size == 0:
            # No trailers expected: the last chunk is followed by an empty line.
            if len(self._buffer) < 2:
                return False
            del self._buffer[:2]
            self._finish()
            return True
        if len(self._buffer) < self._chunk_size + 2:
            return False
        self._emit(bytes(self._buffer[: self._chunk_size]))
        del self._buffer[: self._chunk_size + 2]
        self._chunk_size = -1
        return True

    def _emit(self, chunk: bytes) -> None:
        self._body += chunk
        if self._on_chunk is not None:
            self._on_chunk(chunk)

    def _finish(self) -> None:
        response, self._response = self._response, None
        self._framing = ""
        if response is not None and not response.done():
            response.set_result(Response(self._status, self._headers, bytes(self._body)))
