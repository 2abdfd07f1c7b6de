"""The door's pooled ``httpx`` client, for HTTP tools, OpenAPI fetches and whatever else the platform fetches on a
tenant's behalf: the transport (http(s) only, addresses checked at connect, bodies capped), a client per event loop
and tenant, and ``read_capped`` for a streamed body.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpcore
import httpx

from mcp_infra.conf import platform_settings
from mcp_infra.outbound.policy import OutboundRefused, Resolve
from mcp_infra.outbound.transport import USER_AGENT, CheckedNetworkBackend, capped, rebuild_pool
from mcp_infra.telemetry import spans

MAX_REDIRECTS = 5


class OutboundResponseTooLarge(httpx.TransportError):
    """A response body passed its size limit; ``partial`` holds the first ``limit`` bytes."""

    def __init__(self, limit: int, partial: bytes = b"", *, request: httpx.Request | None = None) -> None:
        super().__init__(f"response body larger than {limit} bytes", request=request)
        self.limit = limit
        self.partial = partial


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request: httpx.Request) -> None:
        self._inner = inner
        self._limit = limit
        self._request = request

    def __aiter__(self) -> AsyncIterator[bytes]:
        return capped(self._inner, self._limit, lambda: OutboundResponseTooLarge(self._limit, request=self._request))

    async def aclose(self) -> None:
        await self._inner.aclose()


class OutboundTransport(httpx.AsyncBaseTransport):
    """The httpx transport of the door: http(s) only, addresses checked at connect, bodies capped (event streams
    excepted: their readers bound each event). Every client built on it gets the checks."""

    def __init__(
        self,
        *,
        tenant_id: int | None = None,
        resolve: Resolve | None = None,
        max_response_bytes: int | None = None,
        verify: Any = True,
    ) -> None:
        self.tenant_id = tenant_id
        self.max_response_bytes = max_response_bytes or platform_settings.OUTBOUND_MAX_RESPONSE_BYTES
        self.backend = CheckedNetworkBackend(tenant_id=tenant_id, resolve=resolve)
        # No proxies from the environment: a proxy would make the connection somewhere the policy never saw.
        self._inner = httpx.AsyncHTTPTransport(verify=verify, trust_env=False)
        rebuild_pool(self._inner, httpcore.AsyncConnectionPool, self.backend)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise OutboundRefused(f"refused: {request.url.scheme!r} URLs are not fetched", request=request)
        if spans.tracing_on():
            return await self._traced(request)
        return await self._handle(request)

    async def _traced(self, request: httpx.Request) -> httpx.Response:
        # The span ends when the headers are in (a streamed body is read later, by the caller).
        attributes = {"http.request.method": request.method, "server.address": request.url.host}
        with spans.span(f"{request.method} {request.url.host}", client=True, attributes=attributes) as span:
            spans.inject_context(request.headers)
            response = await self._handle(request)
            span.set_attribute("http.response.status_code", response.status_code)
            return response

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CappedStream(response.stream, self.max_response_bytes, request)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body of a streamed ``response``, at most ``limit`` bytes after decoding. Raises
    ``OutboundResponseTooLarge`` (with the first ``limit`` bytes as ``partial``) past that, and closes it."""
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise OutboundResponseTooLarge(limit, bytes(body[:limit]), request=response.request)
    finally:
        await response.aclose()
    return bytes(body)


# ---- clients ---------------------------------------------------------------------------------------------------


def build_outbound_client(
    *, tenant_id: int | None, resolve: Resolve | None = None, max_response_bytes: int | None = None
) -> httpx.AsyncClient:
    """A new client on the door (the caller closes it). Most callers want the pooled ``outbound_client``."""
    transport = OutboundTransport(tenant_id=tenant_id, resolve=resolve, max_response_bytes=max_response_bytes)
    timeout = httpx.Timeout(
        platform_settings.OUTBOUND_READ_TIMEOUT,
        connect=platform_settings.OUTBOUND_CONNECT_TIMEOUT,
        pool=platform_settings.OUTBOUND_CONNECT_TIMEOUT,
    )
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        trust_env=False,
        headers={"User-Agent": USER_AGENT},
    )


# Per event loop (a client's connections belong to the loop that opened them), per tenant (a tenant's widened
# networks must never lend a pooled connection to another tenant's request).
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int | None, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def outbound_client(*, tenant_id: int | None) -> httpx.AsyncClient:
    """The pooled client of this process's running event loop for ``tenant_id`` (None: no tenant's widening).
    Callers never close it and never build httpx clients themselves."""
    per_tenant = _clients.setdefault(asyncio.get_running_loop(), {})
    client = per_tenant.get(tenant_id)
    if client is None or client.is_closed:
        client = per_tenant[tenant_id] = build_outbound_client(tenant_id=tenant_id)
    return client


async def outbound_clients_close() -> None:
    """Close the pooled clients of the running loop (at a loop's or a test's end)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.aclose()
