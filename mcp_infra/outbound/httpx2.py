"""The outbound door for clients that speak ``httpx2`` (the ``mcp`` SDK's transports): an ``httpx2`` transport whose
connections are opened by the door's own policy (``CheckedNetworkBackend.checked_addresses``: resolve once, refuse
non-public addresses outside the allowed networks, connect to a checked address), with its scheme rule and
response size cap.

Native to ``httpx2`` rather than a bridge onto the door's ``httpx`` client: one HTTP stack per request instead of
two (a bridge cost 0.65 ms per call, see docs/performance.md). Redirects are not followed here: the SDK applies
its own same-origin rule and sends each hop again, and a new host means a new, checked connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpcore
import httpcore2
import httpx2

from mcp_infra.conf import platform_settings
from mcp_infra.outbound import CheckedNetworkBackend, OutboundRefused, connect_first, system_resolve


class CheckedNetworkBackend2(httpcore2.AsyncNetworkBackend):
    """``httpcore2``'s network backend with the door's address policy in ``connect_tcp``."""

    def __init__(self, *, tenant_id: int | None) -> None:
        self._policy = CheckedNetworkBackend(tenant_id=tenant_id, resolve=system_resolve)
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await self._policy.checked_addresses(host, port)
        except (OutboundRefused, httpcore.ConnectError) as exc:
            raise httpcore2.ConnectError(str(exc)) from None
        return await connect_first(
            addresses,
            timeout,
            lambda address, remaining: self._inner.connect_tcp(address, port, remaining, local_address, socket_options),
            retry_on=(httpcore2.ConnectError, httpcore2.ConnectTimeout),
            timed_out=httpcore2.ConnectTimeout(f"timed out connecting to {host}"),
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("refused: Unix sockets are not reachable through the outbound door")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise httpx2.ReadError(f"the response is larger than the outbound limit of {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class OutboundHttpx2Transport(httpx2.AsyncBaseTransport):
    """http(s) only, addresses checked at connect, bodies capped (event streams excepted: read per event)."""

    def __init__(self, *, tenant_id: int | None) -> None:
        self.max_response_bytes = platform_settings.OUTBOUND_MAX_RESPONSE_BYTES
        # No proxies from the environment: a proxy would make the connection somewhere the policy never saw.
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        # httpx2 takes no network backend; its pool is rebuilt the way httpx2 builds it, with ours (as the door
        # does for httpx).
        self._inner._pool = httpcore2.AsyncConnectionPool(
            ssl_context=self._inner._pool._ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=CheckedNetworkBackend2(tenant_id=tenant_id),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(f"refused: {request.url.scheme!r} URLs are not fetched")
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _CappedStream(response.stream, self.max_response_bytes)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def outbound_httpx2_client(
    *, tenant_id: int | None, headers: dict[str, str], timeout: httpx2.Timeout
) -> httpx2.AsyncClient:
    """An ``httpx2`` client whose connections go through the outbound door's policy (the caller closes it)."""
    return httpx2.AsyncClient(
        transport=OutboundHttpx2Transport(tenant_id=tenant_id), headers=headers, timeout=timeout, follow_redirects=False
    )
