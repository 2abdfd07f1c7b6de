"""The outbound door's lean HTTP/1.1 client (the lean path of upstream calls) applies the door's policy: loopback and
private addresses refused unless allowed, only the allowed network reached, other schemes refused, bodies capped,
no header split by a line break; and it keeps its connection alive between requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_infra.outbound.lean import LeanHttpClient, LeanHttpError
from tests.loopback_http import LoopbackServer, loopback_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with loopback_server("127.0.0.1") as running:
        yield running


@pytest.fixture
def elsewhere() -> Iterator[LoopbackServer]:
    with loopback_server("127.0.0.2") as running:
        yield running


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


def client(url: str, **headers: str) -> LeanHttpClient:
    return LeanHttpClient(url, tenant_id=None, headers=headers, connect_timeout=5.0, read_timeout=5.0)


async def post(http: LeanHttpClient, body: bytes = b"{}", **headers: str) -> tuple[int, bytes]:
    response = await http.post(body, headers)
    return response.status, await response.read()


async def test_loopback_is_refused_by_default_and_nothing_reaches_the_server(server: LoopbackServer) -> None:
    http = client(f"{server.base}/hello")
    with pytest.raises(LeanHttpError, match=r"refused: 127\.0\.0\.1 \(loopback\) is not an allowed network"):
        await post(http)
    await http.aclose()
    assert server.hits["/hello"] == 0


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.5:9/x", r"10\.0\.0\.5 \(private\)"),
        ("http://169.254.169.254/latest/meta-data/", r"169\.254\.169\.254 \(link-local\)"),
        ("http://[::ffff:10.0.0.1]:9/", r"private IPv4 10\.0\.0\.1 inside IPv6"),
    ],
)
async def test_private_addresses_are_refused_even_with_loopback_allowed(
    loopback_allowed: None, url: str, reason: str
) -> None:
    with pytest.raises(LeanHttpError, match=reason):
        await post(client(url))


async def test_an_allowed_network_is_reached_and_only_that_one(
    server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None
) -> None:
    http = client(f"{server.base}/hello", authorization="Bearer upstream-secret")
    status, body = await post(http, b'{"ping": 1}')
    await http.aclose()
    assert status == 200
    assert json.loads(body) == {"host": server.base.removeprefix("http://")}
    assert server.bodies == [b'{"ping": 1}']
    with pytest.raises(LeanHttpError, match=r"127\.0\.0\.2 \(loopback\)"):
        await post(client(f"{elsewhere.base}/hello"))
    assert elsewhere.hits["/hello"] == 0


async def test_only_http_and_https_urls_are_fetched() -> None:
    with pytest.raises(LeanHttpError, match="refused: 'file' URLs are not fetched"):
        client("file:///etc/passwd")


async def test_a_header_split_by_a_line_break_is_refused_before_anything_is_sent(
    server: LoopbackServer, loopback_allowed: None
) -> None:
    http = client(f"{server.base}/hello")
    with pytest.raises(LeanHttpError, match="line break"):
        await post(http, **{"mcp-session-id": "abc\r\nx-injected: 1"})
    await http.aclose()
    assert server.hits["/hello"] == 0


async def test_a_body_over_the_limit_is_cut_off(server: LoopbackServer, settings: Any) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "OUTBOUND_MAX_RESPONSE_BYTES": 4,
    }
    http = client(f"{server.base}/hello")
    with pytest.raises(LeanHttpError, match="larger than the outbound limit of 4 bytes"):
        await post(http)
    assert http.idle_connections == 0
    await http.aclose()
