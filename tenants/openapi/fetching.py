"""Getting a document's bytes: by URL through the outbound door (address policy, redirects re-checked, size
cap, one deadline for the whole fetch), or from a file, both capped at ``MAX_DOCUMENT_BYTES``."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from mcp_infra.conf import platform_settings
from mcp_infra.outbound import OutboundResponseTooLarge, build_outbound_client, outbound_client, read_capped
from tenants.openapi.document import MAX_DOCUMENT_BYTES, OpenApiError
from tenants.openapi.servers import is_web_url


async def document_fetch(
    url: str, *, tenant_id: int, max_bytes: int = MAX_DOCUMENT_BYTES, client: httpx.AsyncClient | None = None
) -> bytes:
    """The body at ``url``, fetched on ``tenant_id``'s behalf (by default with the pooled client of the running
    loop). Raises ``OpenApiError``."""
    if not is_web_url(url):
        raise OpenApiError(f"{url!r} is not an http(s) URL")
    client = client or outbound_client(tenant_id=tenant_id)
    seconds = platform_settings.OUTBOUND_READ_TIMEOUT
    try:
        # One deadline for the whole fetch: a server that drips its body must not hold the request for ever.
        with anyio.move_on_after(seconds):
            headers = {"Accept": "application/json, application/yaml"}
            async with client.stream("GET", url, headers=headers) as response:
                if response.status_code != 200:
                    raise OpenApiError(f"{url}: the server answered {response.status_code}")
                return await read_capped(response, max_bytes)
        raise OpenApiError(f"{url}: timed out after {seconds:g} s")
    except OutboundResponseTooLarge:
        raise OpenApiError(f"{url}: the document is larger than {max_bytes} bytes") from None
    except httpx.HTTPError as exc:
        # The door's refusals name the host and why; other transport errors name their kind.
        raise OpenApiError(f"{url}: could not fetch the document: {exc or type(exc).__name__}") from None


async def document_fetch_once(url: str, *, tenant_id: int, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """``document_fetch`` for a command or a sync view: a client of the door's own making, closed at once, so the
    loop ``async_to_sync`` lends (the server's own, under ASGI) keeps its pooled clients untouched."""
    async with build_outbound_client(tenant_id=tenant_id) as client:
        return await document_fetch(url, tenant_id=tenant_id, max_bytes=max_bytes, client=client)


def document_read(path: str, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the file at ``path``. Raises ``OpenApiError``."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > max_bytes:
            raise OpenApiError(f"{path}: the document is {size} bytes; the limit is {max_bytes}")
        return file.read_bytes()
    except OSError as exc:
        raise OpenApiError(f"{path}: cannot read the file ({exc.strerror})") from None
