"""The outbound door's lean HTTP/1.1 client: keep-alive connections on asyncio, responses parsed by ``httptools``,
for the hot path of proxied upstream calls, where an ``httpx2`` POST alone costs more CPU than the platform's own
handling of a request.

Same policy as the door's transports: http(s) only; each new connection resolved once, every address checked
(``policy.checked_addresses``, the tenant's widened networks included) and the connection made to a checked address
(``transport.connect_first``); connect and read time limits; bodies capped at ``OUTBOUND_MAX_RESPONSE_BYTES`` (event
streams excepted: their reader bounds each event). No proxies, no redirects followed, no content codings asked for.

A response holds one of the client's connection slots until it is released: when its body has been read to the
end (``read()``, or ``iter_bytes()`` run out), when it is closed (``aclose()``), or, for a response dropped without
either, when it is collected (its connection is then closed, not reused).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from mcp_infra.conf import platform_settings
from mcp_infra.outbound.policy import OutboundRefused, Resolve, checked_addresses, system_resolve
from mcp_infra.outbound.transport import MAX_CONNECTIONS, USER_AGENT, connect_first

KEEPALIVE_EXPIRY = 4.0  # seconds an idle connection is kept: under the 5 s after which uvicorn closes one
# After its caller has what it needs, an event stream the server is about to end is read to its end in the background
# for this long, so its connection can be kept.
DRAIN_TIMEOUT = 2.0
# A streamed body stops being read from the socket while this much is waiting for its reader.
STREAM_HIGH_WATER = 256 * 1024


class LeanHttpError(OSError):
    """The request could not be made or its response not read (refused by the policy, unreachable, broken,
    timed out, too large). The message names the host and what happened, never a header or body."""


class LeanHeaders(dict[str, str]):
    """A response's headers by lower-case name. A header sent more than once reads as its values joined by ", "
    (RFC 9110 section 5.3, as ``httpx`` reads it); ``get_list`` gives each value, ``raw`` every line in order
    (``Set-Cookie``, which cannot be joined, is read from there)."""

    __slots__ = ("raw",)

    def __init__(self, raw: list[tuple[str, str]]) -> None:
        super().__init__(raw)
        self.raw = raw
        if len(self) < len(raw):  # a name came more than once (rare): join its values
            self.clear()
            for name, value in raw:
                seen = self.get(name)
                self[name] = value if seen is None else f"{seen}, {value}"

    def get_list(self, name: str) -> list[str]:
        """Every value of ``name`` (any case), in the order received."""
        name = name.lower()
        return [value for key, value in self.raw if key == name]


def _ssl_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:
        import certifi  # the CA bundle httpx and httpx2 verify with, when installed

        context.load_verify_locations(certifi.where())
    except ImportError:
        pass
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request at a time. httptools calls the ``on_*`` methods."""

    def __init__(self, limit: int) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._limit = limit
        self._parser = httptools.HttpResponseParser(self)
        self._headers: list[tuple[str, str]] = []
        self._head: asyncio.Future[tuple[int, LeanHeaders]] | None = None
        self._done: asyncio.Future[None] | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._streaming = False
        self._wake: asyncio.Future[None] | None = None
        self._paused = False
        self.complete = False
        self.keep_alive = False

    # ---- asyncio.Protocol ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._head is None or self.complete:
            # Bytes nobody asked for (or the server's early close notice): this connection cannot be reused.
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(LeanHttpError("the server switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(LeanHttpError(f"malformed HTTP response: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.complete:
            self._fail(LeanHttpError("the connection closed before the response ended"))

    # ---- httptools callbacks ---------------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1").lower(), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        headers = LeanHeaders(self._headers)
        self._streaming = headers.get("content-type", "").startswith("text/event-stream")
        if self._head is not None and not self._head.done():
            self._head.set_result((self._parser.get_status_code(), headers))

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        self._body.append(body)
        if self._streaming:
            self._notify()
            if self._size > STREAM_HIGH_WATER and self.transport is not None and not self._paused:
                self._paused = True
                self.transport.pause_reading()
        elif self._size > self._limit:
            self._fail(LeanHttpError(f"the response is larger than the outbound limit of {self._limit} bytes"))

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self._parser.should_keep_alive()
        if self._done is not None and not self._done.done():
            self._done.set_result(None)
        self._notify()

    # ---- the request ------------------------------------------------------------------------------------

    def send(self, request: bytes) -> asyncio.Future[tuple[int, LeanHeaders]]:
        loop = asyncio.get_running_loop()
        self._head, self._done = loop.create_future(), loop.create_future()
        self._headers, self._body, self._size, self.complete, self._paused = [], [], 0, False, False
        assert self.transport is not None
        self.transport.write(request)
        return self._head

    async def read_body(self) -> bytes:
        assert self._done is not None
        await self._done
        return b"".join(self._body)

    async def iter_body(self) -> AsyncIterator[bytes]:
        while True:
            if self._body:
                chunk = b"".join(self._body)
                self._body, self._size = [], 0
                if self._paused and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
                yield chunk
                continue
            if self.complete:
                return
            if self._done is not None and self._done.done() and self._done.exception() is not None:
                raise self._done.exception()  # type: ignore[misc]
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _fail(self, exc: BaseException) -> None:
        for waiter in (self._head, self._done, self._wake):
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)
        # A waiter nobody awaits any more must not log "exception was never retrieved".
        for waiter in (self._head, self._done):
            if waiter is not None and waiter.done() and not waiter.cancelled():
                waiter.exception()
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class LeanResponse:
    """A response whose head has arrived: ``status``, ``headers`` (``LeanHeaders``), then ``read()`` (capped) or
    ``iter_bytes()`` (event streams). Its slot is released once the body was read to the end or it is closed; the
    connection goes back to the pool when the whole response was read, else it is closed."""

    def __init__(self, client: LeanHttpClient, connection: _Connection, status: int, headers: LeanHeaders) -> None:
        self.status = status
        self.headers = headers
        self._client = client
        self._connection = connection
        self._released = False
        self._draining = False

    async def read(self) -> bytes:
        """The whole body (capped); the slot is released whether or not it could be read."""
        try:
            async with asyncio.timeout(self._client.read_timeout):
                body = await self._connection.read_body()
        except TimeoutError:
            self.release()
            raise LeanHttpError(
                f"the response from {self._client.host} did not end within {self._client.read_timeout:g}s"
            ) from None
        except BaseException:
            self.release()
            raise
        self.release()
        return body

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives; run to its end, the slot is released. (Left part-way, the caller closes the
        response, or hands it to ``release_after_end``, which keeps the slot until its drain ends.)"""
        try:
            async for chunk in self._connection.iter_body():
                yield chunk
        except LeanHttpError:
            self.release()
            raise
        self.release()

    def release(self) -> None:
        """Back to the pool if the whole response was read on a keep-alive connection, else closed."""
        if self._released:
            return
        self._released = True
        connection = self._connection
        if connection.complete and connection.keep_alive and not connection.closed:
            self._client._idle_put(connection)
        else:
            connection.close()
        self._client._slots.release()

    def release_after_end(self) -> None:
        """The caller has what it needs from a stream the server ends next (the answer it waited for): read the
        rest in the background and keep the connection if it ends within ``DRAIN_TIMEOUT``, else close it."""
        if self._released or self._connection.complete or self._connection.closed:
            self.release()
            return
        self._draining = True
        self._client._spawn(self._drain())

    async def _drain(self) -> None:
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT):
                async for _ in self._connection.iter_body():
                    pass
        except (TimeoutError, LeanHttpError):
            pass
        finally:
            self.release()

    async def aclose(self) -> None:
        if not self._draining:
            self.release()

    def __del__(self) -> None:
        # Dropped without being read to the end or closed: its slot must not be lost (its connection, in an
        # unknown state, is closed). A draining response is held by its drain until that releases it.
        if not self._released and not self._draining:
            with contextlib.suppress(Exception):  # the loop may be gone already
                self.release()


class LeanHttpClient:
    """Keep-alive connections to one origin (``url``'s scheme, host and port) for one tenant. ``post`` sends one
    request; the caller reads or streams the response and closes it. Close the client with ``aclose``."""

    def __init__(
        self,
        url: str,
        *,
        tenant_id: int | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
        max_connections: int = MAX_CONNECTIONS,
        resolve: Resolve | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise LeanHttpError(f"refused: {parts.scheme!r} URLs are not fetched")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._tls = _ssl_context() if parts.scheme == "https" else None
        self._limit = platform_settings.OUTBOUND_MAX_RESPONSE_BYTES
        self._tenant_id = tenant_id
        self._resolve = resolve or system_resolve
        authority = parts.netloc.rsplit("@", 1)[-1]
        fixed = {"host": authority, "user-agent": USER_AGENT, "accept-encoding": "identity", **headers}
        self._fixed = _header_block(fixed)
        self._idle: collections.deque[_Connection] = collections.deque()
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False
        self._background: set[asyncio.Task[None]] = set()

    async def post(self, body: bytes, headers: Mapping[str, str]) -> LeanResponse:
        """POST ``body`` to the client's URL with ``headers`` (on top of the fixed ones); the response once its
        head arrived. Raises ``LeanHttpError``; a cancelled caller leaves no connection behind."""
        request = b"".join(
            (
                f"POST {self.target} HTTP/1.1\r\n".encode("latin-1"),
                self._fixed,
                _header_block(headers),
                b"content-length: %d\r\n\r\n" % len(body),
                body,
            )
        )
        await self._slots.acquire()
        connection: _Connection | None = None
        try:
            connection = self._idle_get() or await self._connect()
            head = connection.send(request)
            async with asyncio.timeout(self.read_timeout):
                status, response_headers = await head
        except BaseException as exc:
            if connection is not None:
                connection.close()
            self._slots.release()
            if isinstance(exc, TimeoutError):
                raise LeanHttpError(f"no response from {self.host} within {self.read_timeout:.0f}s") from None
            raise
        return LeanResponse(self, connection, status, response_headers)

    @property
    def idle_connections(self) -> int:
        """Kept-alive connections waiting for the next request."""
        return sum(1 for connection in self._idle if not connection.closed)

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.popleft().close()

    # ---- the pool ---------------------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _idle_get(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < KEEPALIVE_EXPIRY:
                return connection
            connection.close()
        return None

    def _idle_put(self, connection: _Connection) -> None:
        if self._closed:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    async def _connect(self) -> _Connection:
        try:
            addresses = await checked_addresses(self.host, self.port, tenant_id=self._tenant_id, resolve=self._resolve)
        except (OutboundRefused, OSError) as exc:  # refused, or the name did not resolve
            raise LeanHttpError(str(exc)) from None
        loop = asyncio.get_running_loop()

        async def connect(address: str, remaining: float | None) -> _Connection:
            async with asyncio.timeout(remaining):
                _, protocol = await loop.create_connection(
                    lambda: _Connection(self._limit),
                    address,
                    self.port,
                    ssl=self._tls,
                    server_hostname=self.host if self._tls is not None else None,
                )
            return protocol

        try:
            return await connect_first(
                addresses,
                self._connect_timeout,
                connect,
                retry_on=(OSError,),
                timed_out=LeanHttpError(f"timed out connecting to {self.host}"),
            )
        except LeanHttpError:
            raise
        except OSError as exc:
            raise LeanHttpError(f"could not connect to {self.host}: {exc}") from None


def _header_block(headers: Mapping[str, str]) -> bytes:
    """Header lines; a CR or LF in a name or value (a header split into two) is refused."""
    lines = []
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0"):
            raise LeanHttpError(f"refused: the header {name!r} holds a line break")
        lines.append(f"{name}: {value}\r\n")
    try:
        return "".join(lines).encode("latin-1")
    except UnicodeEncodeError:
        raise LeanHttpError("refused: a header holds characters HTTP/1.1 cannot carry") from None
