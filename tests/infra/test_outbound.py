"""The outbound door against real sockets: what it refuses, that it connects where it checked, redirects, limits."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcp_infra.outbound import (
    OutboundRefused,
    OutboundResponseTooLarge,
    build_outbound_client,
    non_public_reason,
    outbound_client,
    outbound_clients_close,
    read_capped,
)
from tests.factories import TenantFactory
from tests.loopback_http import LoopbackServer, loopback_server

pytestmark = pytest.mark.anyio

PUBLIC = "93.184.215.14"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with loopback_server("127.0.0.1") as running:
        yield running


@pytest.fixture
def elsewhere() -> Iterator[LoopbackServer]:
    """A server on 127.0.0.2: reachable on this machine, but outside an allow-list of 127.0.0.1/32."""
    with loopback_server("127.0.0.2") as running:
        yield running


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


class Answers:
    """A resolver that answers from a script and counts its lookups."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        return self.answers[min(len(self.lookups), len(self.answers)) - 1]


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "not globally routable"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("::ffff:127.0.0.1", "loopback IPv4 127.0.0.1 inside IPv6"),
        ("::ffff:169.254.169.254", "link-local IPv4 169.254.169.254 inside IPv6"),
        ("64:ff9b::a00:5", "private IPv4 10.0.0.5 inside IPv6"),
        ("2002:7f00:1::1", "loopback IPv4 127.0.0.1 inside IPv6"),
    ],
)
async def test_non_public_addresses_are_refused_before_any_connection(address: str, reason: str) -> None:
    assert non_public_reason(address) == reason
    host = f"[{address}]" if ":" in address else address
    async with build_outbound_client(tenant_id=None) as client:
        with pytest.raises(OutboundRefused) as refused:
            await client.get(f"http://{host}:9/")
    shown = ipaddress.ip_address(address)  # as the door writes it: ::ffff:7f00:1
    assert str(refused.value) == f"refused: {shown} ({reason}) is not an allowed network"


def test_public_addresses_pass() -> None:
    assert non_public_reason(PUBLIC) is None
    assert non_public_reason("2606:4700:4700::1111") is None


async def test_loopback_is_refused_by_default_and_nothing_reaches_the_server(server: LoopbackServer) -> None:
    async with build_outbound_client(tenant_id=None) as client:
        with pytest.raises(OutboundRefused, match=r"refused: 127\.0\.0\.1 \(loopback\)"):
            await client.get(f"{server.base}/hello")
    assert server.hits["/hello"] == 0


async def test_an_allowed_network_is_reached_and_only_that_one(
    server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None
) -> None:
    async with build_outbound_client(tenant_id=None) as client:
        assert (await client.get(f"{server.base}/hello")).status_code == 200
        with pytest.raises(OutboundRefused, match=r"127\.0\.0\.2 \(loopback\)"):
            await client.get(f"{elsewhere.base}/hello")
    assert elsewhere.hits["/hello"] == 0


async def test_a_mapped_ipv6_address_inside_an_allowed_network_is_judged_by_its_ipv4(loopback_allowed: None) -> None:
    async with build_outbound_client(tenant_id=None) as client:
        with pytest.raises(OutboundRefused, match=r"private IPv4 10\.0\.0\.1 inside IPv6"):
            await client.get("http://[::ffff:10.0.0.1]:9/")


@pytest.mark.parametrize("target", ["http://10.0.0.5:9/x", "http://169.254.169.254/latest/meta-data/", "elsewhere"])
async def test_a_redirect_to_a_refused_address_is_refused(
    server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None, target: str
) -> None:
    target = f"{elsewhere.base}/hello" if target == "elsewhere" else target
    async with build_outbound_client(tenant_id=None) as client:
        with pytest.raises(OutboundRefused, match="refused: "):
            await client.get(f"{server.base}/redirect", params={"to": target})
    assert server.hits["/redirect"] == 1
    assert elsewhere.hits["/hello"] == 0


async def test_a_redirect_within_allowed_addresses_is_followed(server: LoopbackServer, loopback_allowed: None) -> None:
    async with build_outbound_client(tenant_id=None) as client:
        response = await client.get(f"{server.base}/redirect", params={"to": f"{server.base}/hello"})
    assert response.status_code == 200
    assert server.hits["/hello"] == 1


async def test_the_connection_goes_to_the_checked_address_and_keeps_the_name(
    server: LoopbackServer, loopback_allowed: None
) -> None:
    port = server.server_address[1]
    resolve = Answers(["127.0.0.1"])
    async with build_outbound_client(tenant_id=None, resolve=resolve) as client:
        response = await client.get(f"http://api.example.test:{port}/hello")
    assert response.json() == {"host": f"api.example.test:{port}"}
    assert resolve.lookups == ["api.example.test"]


async def test_a_name_that_rebinds_after_the_check_reaches_only_checked_addresses(
    server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None
) -> None:
    """First answer allowed, every later one elsewhere (DNS rebinding): the request goes where the one lookup
    pointed, and the next connection (the test server closes each) is looked up and checked anew."""
    port = server.server_address[1]
    resolve = Answers(["127.0.0.1"], ["127.0.0.2"])
    async with build_outbound_client(tenant_id=None, resolve=resolve) as client:
        assert (await client.get(f"http://rebind.example.test:{port}/hello")).status_code == 200
        assert resolve.lookups == ["rebind.example.test"]
        with pytest.raises(OutboundRefused, match=r"rebind\.example\.test -> 127\.0\.0\.2 \(loopback\)"):
            await client.get(f"http://rebind.example.test:{port}/hello")
    assert server.hits["/hello"] == 1
    assert elsewhere.hits["/hello"] == 0


async def test_a_name_resolving_to_a_public_address_first_and_a_private_one_second_is_refused(server: Any) -> None:
    resolve = Answers([PUBLIC, "10.0.0.5"])
    async with build_outbound_client(tenant_id=None, resolve=resolve) as client:
        with pytest.raises(OutboundRefused) as refused:
            await client.get("http://mixed.example.test/")
    assert str(refused.value) == "refused: mixed.example.test -> 10.0.0.5 (private) is not an allowed network"


async def test_only_http_and_https_are_fetched() -> None:
    async with build_outbound_client(tenant_id=None) as client:
        with pytest.raises(OutboundRefused, match="'ftp' URLs are not fetched"):
            await client.get("ftp://example.com/file")


async def test_a_body_over_the_door_limit_fails_to_read(server: LoopbackServer, loopback_allowed: None) -> None:
    async with build_outbound_client(tenant_id=None, max_response_bytes=1000) as client:
        assert len((await client.get(f"{server.base}/bytes", params={"n": 1000})).content) == 1000
        with pytest.raises(OutboundResponseTooLarge, match="larger than 1000 bytes"):
            await client.get(f"{server.base}/bytes", params={"n": 1001})


async def test_read_capped_keeps_the_first_bytes_of_a_longer_body(
    server: LoopbackServer, loopback_allowed: None
) -> None:
    async with build_outbound_client(tenant_id=None) as client:
        async with client.stream("GET", f"{server.base}/bytes", params={"n": 5000}) as response:
            with pytest.raises(OutboundResponseTooLarge) as cut:
                await read_capped(response, 100)
        assert cut.value.partial == b"x" * 100
        async with client.stream("GET", f"{server.base}/bytes", params={"n": 100}) as response:
            assert await read_capped(response, 100) == b"x" * 100


async def test_a_silent_server_times_out(settings: Any, loopback_allowed: None) -> None:
    import socket

    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_READ_TIMEOUT": 0.3}
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts into its backlog, never answers
        async with build_outbound_client(tenant_id=None) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get(f"http://127.0.0.1:{silent.getsockname()[1]}/")


@pytest.mark.django_db(transaction=True)
async def test_staff_widening_applies_to_that_tenant_only(server: LoopbackServer) -> None:
    from asgiref.sync import sync_to_async

    widened = await sync_to_async(TenantFactory)(slug="on-prem", outbound_allowed_networks=["127.0.0.0/8"])
    plain = await sync_to_async(TenantFactory)(slug="plain")
    try:
        assert (await outbound_client(tenant_id=widened.pk).get(f"{server.base}/hello")).status_code == 200
        for tenant_id in (plain.pk, None):
            with pytest.raises(OutboundRefused, match="loopback"):
                await outbound_client(tenant_id=tenant_id).get(f"{server.base}/hello")
        assert outbound_client(tenant_id=widened.pk) is outbound_client(tenant_id=widened.pk)
        assert outbound_client(tenant_id=widened.pk) is not outbound_client(tenant_id=plain.pk)
    finally:
        await outbound_clients_close()
    assert server.hits["/hello"] == 1
