"""The outbound door for clients that speak ``httpx2`` (the ``mcp`` SDK's transports): an ``httpx2`` transport whose
connections are opened by the door's own policy (``CheckedBackend`` on ``httpcore2``: resolve once, refuse
non-public addresses outside the allowed networks, connect to a checked address), with its scheme rule and
response size cap.

Native to ``httpx2`` rather than a bridge onto the door's ``httpx`` client: one HTTP stack per request instead of
two (a bridge cost 0.65 ms per call, see docs/performance.md). Redirects are not followed here: the SDK applies
its own same-origin rule and sends each hop again, and a new host means a new, checked connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType
from typing import ClassVar

import httpcore2
import httpx2

from mcp_infra.conf import platform_settings
from mcp_infra.outbound.policy import Resolve
from mcp_infra.outbound.transport import CheckedBackend, capped, rebuild_pool


class CheckedNetworkBackend2(CheckedBackend, httpcore2.AsyncNetworkBackend):
    """``httpcore2``'s backend with the door's policy: a refusal is an ``httpcore2.ConnectError`` (what the SDK's
    transports handle), its message the door's."""

    core: ClassVar[ModuleType] = httpcore2


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    def __aiter__(self) -> AsyncIterator[bytes]:
        return capped(
            self._inner,
            self._limit,
            lambda: httpx2.ReadError(f"the response is larger than the outbound limit of {self._limit} bytes"),
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class OutboundHttpx2Transport(httpx2.AsyncBaseTransport):
    """http(s) only, addresses checked at connect, bodies capped (event streams excepted: read per event)."""

    def __init__(self, *, tenant_id: int | None, resolve: Resolve | None = None) -> None:
        self.max_response_bytes = platform_settings.OUTBOUND_MAX_RESPONSE_BYTES
        # No proxies from the environment: a proxy would make the connection somewhere the policy never saw.
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        rebuild_pool(
            self._inner, httpcore2.AsyncConnectionPool, CheckedNetworkBackend2(tenant_id=tenant_id, resolve=resolve)
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
    *, tenant_id: int | None, headers: dict[str, str], timeout: httpx2.Timeout, resolve: Resolve | None = None
) -> httpx2.AsyncClient:
    """An ``httpx2`` client whose connections go through the outbound door's policy (the caller closes it;
    ``resolve``: how names become addresses, the system resolver unless a test says otherwise)."""
    return httpx2.AsyncClient(
        transport=OutboundHttpx2Transport(tenant_id=tenant_id, resolve=resolve),
        headers=headers,
        timeout=timeout,
        follow_redirects=False,
    )
