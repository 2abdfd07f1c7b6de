"""The outbound door for clients that speak ``httpx2`` (the ``mcp`` SDK's transports): an ``httpx2`` transport that
sends every request through the door's pooled ``httpx`` client, so its address checks, timeouts and caps apply.

Redirects are not followed here: the SDK applies its own same-origin rule and sends each hop again through this
transport, which checks it again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2

from mcp_platform.outbound import outbound_client


def _translated(exc: httpx.TransportError) -> httpx2.TransportError:
    # The SDK catches httpx2's exceptions; the message (e.g. "refused: 10.0.0.5 (private) ...") is kept.
    if isinstance(exc, httpx.ConnectTimeout):
        return httpx2.ConnectTimeout(str(exc))
    if isinstance(exc, httpx.TimeoutException):
        return httpx2.ReadTimeout(str(exc))
    if isinstance(exc, httpx.ConnectError | httpx.UnsupportedProtocol) or type(exc).__name__ == "OutboundRefused":
        return httpx2.ConnectError(str(exc))
    return httpx2.ReadError(str(exc))


class _BridgedStream(httpx2.AsyncByteStream):
    """The body of a door response, read as it arrives (event streams stay streams)."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.TransportError as exc:
            raise _translated(exc) from None

    async def aclose(self) -> None:
        await self._response.aclose()


class OutboundHttpx2Transport(httpx2.AsyncBaseTransport):
    """``httpx2`` requests carried by ``outbound_client(tenant_id=...)``."""

    def __init__(self, *, tenant_id: int | None) -> None:
        self.tenant_id = tenant_id

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        door = outbound_client(tenant_id=self.tenant_id)
        outgoing = door.build_request(
            request.method,
            str(request.url),
            headers=request.headers.raw,
            content=await request.aread(),
            extensions={"timeout": request.extensions["timeout"]} if "timeout" in request.extensions else None,
        )
        try:
            response = await door.send(outgoing, stream=True, follow_redirects=False)
        except httpx.TransportError as exc:
            raise _translated(exc) from None
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers.raw,
            stream=_BridgedStream(response),
            request=request,
        )

    async def aclose(self) -> None:
        # The door's client is pooled for the process; closing an SDK client must not close it.
        return None


def outbound_httpx2_client(
    *, tenant_id: int | None, headers: dict[str, str], timeout: httpx2.Timeout
) -> httpx2.AsyncClient:
    """An ``httpx2`` client whose every request goes through the outbound door (the caller closes it)."""
    return httpx2.AsyncClient(
        transport=OutboundHttpx2Transport(tenant_id=tenant_id), headers=headers, timeout=timeout, follow_redirects=False
    )
