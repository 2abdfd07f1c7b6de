"""uvicorn's httptools protocol with the two bounds it lacks: time to send a request's headers, and their size.

uvicorn times out only idle keep-alive connections: a connection that never sends a byte, or sends its headers a
byte at a time, is held for ever, and httptools buffers headers of any size. Here each request's headers must
arrive within ``header_timeout`` of the connection opening (or of the request's first byte on a kept-alive
connection), and no more than ``max_header_bytes`` of them are buffered: 408 or 431, then the connection closes.
The exact header-size check (431) and the body deadline are the ASGI middleware's
(``mcp_platform.gateway.limits``); this one keeps memory and sockets bounded before the application is called.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# After a refusal, what the client still sends is read and dropped this long before the socket closes: closing
# with unread data resets the connection, and the client would lose the refusal.
LINGER_SECONDS = 2.0


def refusal(status: int, reason: str) -> bytes:
    return f"HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode("ascii")


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """Set ``header_timeout`` and ``max_header_bytes`` on a subclass (``bounded_protocol``)."""

    header_timeout: float = 10.0
    max_header_bytes: int = 32 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._request_begun = False
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self._header_timer is not None and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.max_header_bytes:
                self._refuse(refusal(431, "Request Header Fields Too Large"))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._request_begun = True
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        self._header_bytes = 0
        self._request_begun = False
        super().on_headers_complete()

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._on_header_timeout)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _on_header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self._request_begun:
            self._refuse(refusal(408, "Request Timeout"))
        else:
            self.transport.close()

    def _refuse(self, response: bytes) -> None:
        """Answer, stop parsing, drop what else arrives for ``LINGER_SECONDS``, close."""
        self._refused = True
        self._cancel_header_timer()
        self.transport.write(response)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)


def bounded_protocol(*, header_timeout: float, max_header_bytes: int) -> type[BoundedHttpToolsProtocol]:
    """The protocol class for uvicorn's ``http`` option, with these bounds."""
    return type(
        "ConfiguredHttpToolsProtocol",
        (BoundedHttpToolsProtocol,),
        {"header_timeout": header_timeout, "max_header_bytes": max_header_bytes},
    )
