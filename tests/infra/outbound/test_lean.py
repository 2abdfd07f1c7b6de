"""What only the lean client does: it refuses a header split by a line break before sending anything, it keeps no
connection after a body over the cap, and a response dropped without being read or closed gives its connection
slot back (its connection is closed, not reused)."""

from __future__ import annotations

import gc

import anyio
import pytest

from mcp_infra.outbound.lean import LeanHttpClient, LeanHttpError
from tests.loopback_http import LoopbackServer

pytestmark = pytest.mark.anyio


def client(url: str, *, max_connections: int = 100) -> LeanHttpClient:
    return LeanHttpClient(
        url, tenant_id=None, headers={}, connect_timeout=5.0, read_timeout=5.0, max_connections=max_connections
    )


async def test_only_http_and_https_urls_are_fetched() -> None:
    with pytest.raises(LeanHttpError, match="refused: 'file' URLs are not fetched"):
        client("file:///etc/passwd")


async def test_a_header_split_by_a_line_break_is_refused_before_anything_is_sent(
    server: LoopbackServer, loopback_allowed: None
) -> None:
    http = client(f"{server.base}/hello")
    with pytest.raises(LeanHttpError, match="line break"):
        await http.post(b"{}", {"mcp-session-id": "abc\r\nx-injected: 1"})
    await http.aclose()
    assert server.hits["/hello"] == 0


async def test_a_body_over_the_limit_leaves_no_connection(server: LoopbackServer, settings: object) -> None:
    settings.MCP_PLATFORM = {  # type: ignore[attr-defined]
        **settings.MCP_PLATFORM,  # type: ignore[attr-defined]
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "OUTBOUND_MAX_RESPONSE_BYTES": 4,
    }
    http = client(f"{server.base}/hello")
    with pytest.raises(LeanHttpError, match="larger than the outbound limit of 4 bytes"):
        await (await http.post(b"{}", {})).read()
    assert http.idle_connections == 0
    await http.aclose()


async def test_a_response_dropped_unread_and_unclosed_frees_its_slot(
    server: LoopbackServer, loopback_allowed: None
) -> None:
    http = client(f"{server.base}/hello", max_connections=1)
    try:
        with anyio.fail_after(5):
            for _ in range(3):
                response = await http.post(b"{}", {})
                assert response.status == 200
                del response  # neither read nor closed
                gc.collect()
            response = await http.post(b"{}", {})
            assert response.headers["content-type"] == "application/json"
            await response.read()
    finally:
        await http.aclose()
    assert server.hits["/hello"] == 4


async def test_a_closed_response_frees_its_slot_once(server: LoopbackServer, loopback_allowed: None) -> None:
    http = client(f"{server.base}/hello", max_connections=1)
    try:
        with anyio.fail_after(5):
            response = await http.post(b"{}", {})
            await response.aclose()
            await response.aclose()  # a second close gives back nothing more
            del response
            gc.collect()
            held = await http.post(b"{}", {})
            with pytest.raises(TimeoutError):
                with anyio.fail_after(0.3):
                    await http.post(b"{}", {})
            await held.read()
    finally:
        await http.aclose()
