"""The outbound door for ``httpx2`` clients (what upstream MCP connections use) applies the door's policy: loopback
and private addresses refused unless allowed, only the allowed network reached, other schemes refused, bodies
capped; the refusal message is the door's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from mcp_infra.outbound.httpx2 import outbound_httpx2_client
from tests.loopback_http import LoopbackServer, loopback_server

pytestmark = pytest.mark.anyio

TIMEOUT = httpx2.Timeout(5.0)


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


def client() -> httpx2.AsyncClient:
    return outbound_httpx2_client(tenant_id=None, headers={}, timeout=TIMEOUT)


async def test_loopback_is_refused_by_default_and_nothing_reaches_the_server(server: LoopbackServer) -> None:
    async with client() as http:
        with pytest.raises(httpx2.ConnectError, match=r"refused: 127\.0\.0\.1 \(loopback\) is not an allowed network"):
            await http.get(f"{server.base}/hello")
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
    async with client() as http:
        with pytest.raises(httpx2.ConnectError, match=reason):
            await http.get(url)


async def test_an_allowed_network_is_reached_and_only_that_one(
    server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None
) -> None:
    async with client() as http:
        assert (await http.get(f"{server.base}/hello")).status_code == 200
        with pytest.raises(httpx2.ConnectError, match=r"127\.0\.0\.2 \(loopback\)"):
            await http.get(f"{elsewhere.base}/hello")
    assert elsewhere.hits["/hello"] == 0


async def test_redirects_are_left_to_the_caller(server: LoopbackServer, loopback_allowed: None) -> None:
    async with client() as http:
        response = await http.get(f"{server.base}/redirect", params={"to": "http://10.0.0.5:9/x"})
    assert response.is_redirect


async def test_a_body_over_the_limit_is_cut_off(server: LoopbackServer, settings: Any) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "OUTBOUND_MAX_RESPONSE_BYTES": 4,
    }
    async with client() as http:
        with pytest.raises(httpx2.ReadError, match="larger than the outbound limit of 4 bytes"):
            await http.get(f"{server.base}/hello")
