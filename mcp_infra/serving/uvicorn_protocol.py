"""uvicorn's httptools protocol with the two bounds it lacks: time to send a request's headers, and their size.

uvicorn times out only idle keep-alive connections: a connection that never sends a byte, or sends its headers a
byte at a time, is held for ever, and httptools buffers headers of any size. Here each request's headers must
arrive within ``header_timeout`` of the connection opening (or of the request's first byte on a kept-alive
connection), and no more than ``max_header_bytes`` of them are buffered: 408 or 431, then the connection closes.
The exact header-size check (431) and the body deadline are the ASGI middleware's
(``mcp_platform.gateway.limits``); this one keeps memory and sockets bounded before the application is called.

A connection closed while the client is still sending a request's body (a 413 answered before a huge body was
read) closes gracefully, as nginx's lingering close does: the response is flushed, the write side shut, and what
the client still sends is read and dropped for up to ``LINGER_SECONDS`` and ``LINGER_BYTES``, until the client
closes. Closed at once, the unread data in the socket's buffer would make the kernel reset the connection, and the
client would lose the answer before reading it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# After a refusal, what the client still sends is read and dropped this long (and up to this much) before the
# socket closes: closing with unread data resets the connection, and the client would lose the refusal.
LINGER_SECONDS = 2.0
LINGER_BYTES = 128 * 1024 * 1024


def refusal(status: int, reason: str) -> bytes:
    return f"HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode("ascii")


class LingeringTransport:
    """The connection's transport as uvicorn's code sees it: ``close`` asks the protocol, which lingers when a
    request's body is still arriving; everything else is the transport's own."""

    def __init__(self, transport: asyncio.Transport, protocol: BoundedHttpToolsProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        # The transport's own bound methods, so the calls of every response cost no ``__getattr__``.
        self.write = transport.write
        self.get_extra_info = transport.get_extra_info
        self.pause_reading = transport.pause_reading
        self.resume_reading = transport.resume_reading

    def close(self) -> None:
        self._protocol.close_gracefully()

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """Set ``header_timeout`` and ``max_header_bytes`` on a subclass (``bounded_protocol``)."""

    header_timeout: float = 10.0
    max_header_bytes: int = 32 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._request_begun = False
        # A request has begun and its body has not all arrived.
        self._in_message = False
        self.lingering = False
        self._lingered_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._socket_transport = transport
        self.transport = LingeringTransport(transport, self)  # type: ignore[assignment]
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            self._lingered_bytes += len(data)
            if self._lingered_bytes > LINGER_BYTES:
                self._socket_transport.close()
            return
        super().data_received(data)
        if self._header_timer is not None and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.max_header_bytes:
                self._refuse(refusal(431, "Request Header Fields Too Large"))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._request_begun = True
        self._in_message = True
        self._arm_header_timer()

    def on_message_complete(self) -> None:
        self._in_message = False
        super().on_message_complete()

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
        """Answer, stop parsing, and close gracefully."""
        self._socket_transport.write(response)
        self._linger()

    def close_gracefully(self) -> None:
        """Close the connection: at once, or lingering while a request's body is still arriving."""
        if self._in_message and not self.lingering and not self._socket_transport.is_closing():
            self._linger()
        else:
            self._socket_transport.close()

    def _linger(self) -> None:
        """Stop parsing and writing (the write side is shut once the response is flushed), then drop what the
        client still sends until it closes, ``LINGER_BYTES`` have come or ``LINGER_SECONDS`` have passed."""
        self.lingering = True
        self._cancel_header_timer()
        # The request being answered can send nothing more (the write side is shut): tell it as a lost connection
        # would, so a response still on its way is dropped and the application hears the client left.
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self._unset_keepalive_if_required()
        transport = self._socket_transport
        if transport.can_write_eof():
            transport.write_eof()
        # Reading may be paused (uvicorn's flow control, while the application did not read the body).
        transport.resume_reading()
        self.loop.call_later(LINGER_SECONDS, transport.close)


def bounded_protocol(*, header_timeout: float, max_header_bytes: int) -> type[BoundedHttpToolsProtocol]:
    """The protocol class for uvicorn's ``http`` option, with these bounds."""
    return type(
        "ConfiguredHttpToolsProtocol",
        (BoundedHttpToolsProtocol,),
        {"header_timeout": header_timeout, "max_header_bytes": max_header_bytes},
    )
