"""What every client of the outbound door does, against real sockets: the address policy (non-public addresses
refused unless allowed, every address of a DNS answer checked, the connection made to the checked address),
redirects (each hop checked, a limit; or left to the caller), the size cap, the read timeout, repeated headers, and
connection slots freed by a body read to its end. The client-metadata fetch (blocking, on urllib3) shares the
address policy and is held to its refusals here; its fetch itself is tested in tests/oauth/test_cimd.py."""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from typing import Any

import anyio
import httpx
import pytest
from oauth2_provider.cimd import CIMDError

from mcp_infra.outbound import MAX_REDIRECTS, non_public_reason, transport
from mcp_platform.oauth.cimd import PlatformMetadataFetcher
from tests.infra.outbound.doors import Answers, Door
from tests.loopback_http import LoopbackServer

pytestmark = pytest.mark.anyio

PUBLIC = "93.184.215.14"


# ---- the address policy -----------------------------------------------------------------------------------------


NON_PUBLIC = [
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
]


@pytest.mark.parametrize(("address", "reason"), NON_PUBLIC)
async def test_non_public_addresses_are_refused_before_any_connection(door: Door, address: str, reason: str) -> None:
    assert non_public_reason(address) == reason
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(door.refused) as refused:
        await door.post(f"http://{host}:9/")
    shown = ipaddress.ip_address(address)  # as the door writes it: ::ffff:7f00:1
    assert str(refused.value) == f"refused: {shown} ({reason}) is not an allowed network"


@pytest.mark.parametrize(("address", "reason"), NON_PUBLIC)
def test_the_client_metadata_fetch_refuses_the_same_addresses(address: str, reason: str) -> None:
    """The client-metadata fetch is blocking (django-oauth-toolkit calls it from a synchronous view) and keeps its
    own urllib3 connection, but its addresses come from the same policy (``resolve_checked_sync``)."""
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(CIMDError) as refused:
        PlatformMetadataFetcher().fetch(f"https://{host}:9/client.json")
    shown = ipaddress.ip_address(address)
    assert f"(refused: {shown} ({reason}) is not an allowed network)" in str(refused.value)


def test_public_addresses_pass() -> None:
    assert non_public_reason(PUBLIC) is None
    assert non_public_reason("2606:4700:4700::1111") is None


async def test_loopback_is_refused_by_default_and_nothing_reaches_the_server(
    door: Door, server: LoopbackServer
) -> None:
    with pytest.raises(door.refused, match=r"refused: 127\.0\.0\.1 \(loopback\) is not an allowed network"):
        await door.post(f"{server.base}/hello")
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
    door: Door, loopback_allowed: None, url: str, reason: str
) -> None:
    with pytest.raises(door.refused, match=reason):
        await door.post(url)


async def test_an_allowed_network_is_reached_and_only_that_one(
    door: Door, server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None
) -> None:
    answer = await door.post(f"{server.base}/hello", b'{"ping": 1}')
    assert answer.status == 200
    assert json.loads(answer.body) == {"host": server.base.removeprefix("http://")}
    assert server.bodies == [b'{"ping": 1}']
    with pytest.raises(door.refused, match=r"127\.0\.0\.2 \(loopback\)"):
        await door.post(f"{elsewhere.base}/hello")
    assert elsewhere.hits["/hello"] == 0


async def test_the_connection_goes_to_the_checked_address_and_keeps_the_name(
    door_kind: str, server: LoopbackServer, loopback_allowed: None
) -> None:
    port = server.server_address[1]
    resolve = Answers(["127.0.0.1"])
    door = Door.build(door_kind, resolve=resolve)
    try:
        answer = await door.post(f"http://api.example.test:{port}/hello")
    finally:
        await door.aclose()
    assert json.loads(answer.body) == {"host": f"api.example.test:{port}"}
    assert resolve.lookups == ["api.example.test"]


async def test_a_name_that_rebinds_after_the_check_reaches_only_checked_addresses(
    door_kind: str, server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None
) -> None:
    """First answer allowed, every later one elsewhere (DNS rebinding): the request goes where the one lookup
    pointed, and the next connection (the test server closes each) is looked up and checked anew."""
    port = server.server_address[1]
    resolve = Answers(["127.0.0.1"], ["127.0.0.2"])
    door = Door.build(door_kind, resolve=resolve)
    try:
        assert (await door.post(f"http://rebind.example.test:{port}/hello")).status == 200
        assert resolve.lookups == ["rebind.example.test"]
        with pytest.raises(door.refused, match=r"rebind\.example\.test -> 127\.0\.0\.2 \(loopback\)"):
            await door.post(f"http://rebind.example.test:{port}/hello")
    finally:
        await door.aclose()
    assert server.hits["/hello"] == 1
    assert elsewhere.hits["/hello"] == 0


async def test_a_name_resolving_to_a_public_address_first_and_a_private_one_second_is_refused(door_kind: str) -> None:
    door = Door.build(door_kind, resolve=Answers([PUBLIC, "10.0.0.5"]))
    try:
        with pytest.raises(door.refused) as refused:
            await door.post("http://mixed.example.test/")
    finally:
        await door.aclose()
    assert str(refused.value) == "refused: mixed.example.test -> 10.0.0.5 (private) is not an allowed network"


async def test_a_name_that_does_not_resolve_fails_to_connect(door_kind: str) -> None:
    async def nowhere(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    door = Door.build(door_kind, resolve=nowhere)
    try:
        with pytest.raises(door.unreachable, match=r"could not resolve nowhere\.example\.test"):
            await door.post("http://nowhere.example.test/")
    finally:
        await door.aclose()


async def test_only_http_and_https_are_fetched(door: Door) -> None:
    with pytest.raises(door.bad_scheme, match="'ftp' URLs are not fetched"):
        await door.post("ftp://example.com/file")


# ---- redirects ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["http://10.0.0.5:9/x", "http://169.254.169.254/latest/meta-data/", "elsewhere"])
async def test_a_redirect_to_a_refused_address_never_reaches_it(
    door: Door, server: LoopbackServer, elsewhere: LoopbackServer, loopback_allowed: None, target: str
) -> None:
    """The httpx client follows redirects and checks each hop; the others leave them to their caller (the SDK's
    same-origin rule), which sends each hop again through the door."""
    target = f"{elsewhere.base}/hello" if target == "elsewhere" else target
    url = f"{server.base}/redirect?to={target}"
    if door.follows_redirects:
        with pytest.raises(door.refused, match="refused: "):
            await door.post(url)
    else:
        answer = await door.post(url)
        assert answer.status == 302
        assert answer.values("location") == [target]
    assert server.hits["/redirect"] == 1
    assert elsewhere.hits["/hello"] == 0


async def test_a_redirect_within_allowed_addresses_is_followed_or_returned(
    door: Door, server: LoopbackServer, loopback_allowed: None
) -> None:
    answer = await door.post(f"{server.base}/redirect?to={server.base}/hello")
    if door.follows_redirects:
        assert answer.status == 200
        assert server.hits["/hello"] == 1
    else:
        assert answer.status == 302
        assert server.hits["/hello"] == 0


async def test_redirects_are_followed_a_bounded_number_of_times(
    door: Door, server: LoopbackServer, loopback_allowed: None
) -> None:
    if door.follows_redirects:
        with pytest.raises(httpx.TooManyRedirects):
            await door.post(f"{server.base}/loop")
        assert server.hits["/loop"] == MAX_REDIRECTS + 1
    else:
        assert (await door.post(f"{server.base}/loop")).status == 302
        assert server.hits["/loop"] == 1


# ---- size, time, headers, slots ----------------------------------------------------------------------------------


async def test_a_body_over_the_limit_is_cut_off(door_kind: str, server: LoopbackServer, settings: Any) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "OUTBOUND_MAX_RESPONSE_BYTES": 1000,
    }
    door = Door.build(door_kind)
    try:
        assert (await door.post(f"{server.base}/bytes?n=1000")).body == b"x" * 1000
        with pytest.raises(door.too_large, match=r"larger than (the outbound limit of )?1000 bytes"):
            await door.post(f"{server.base}/bytes?n=1001")
    finally:
        await door.aclose()


async def test_a_silent_server_times_out(door_kind: str, settings: Any) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "OUTBOUND_READ_TIMEOUT": 0.3,
    }
    door = Door.build(door_kind)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts into its backlog, never answers
        started = time.monotonic()
        try:
            with pytest.raises(door.timed_out):
                await door.post(f"http://127.0.0.1:{silent.getsockname()[1]}/")
        finally:
            await door.aclose()
    assert time.monotonic() - started < 3


async def test_a_repeated_header_keeps_every_value(door: Door, server: LoopbackServer, loopback_allowed: None) -> None:
    answer = await door.post(f"{server.base}/repeated")
    assert answer.values("x-tag") == ["first", "second"]
    assert answer.joined["x-tag"] == "first, second"  # RFC 9110 section 5.3, as httpx reads it
    assert answer.values("set-cookie") == ["a=1; Path=/", "b=2; Path=/"]


async def test_a_body_read_to_its_end_frees_its_slot_without_a_close(
    door_kind: str, server: LoopbackServer, loopback_allowed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one connection slot, streamed responses read to their end and never closed do not block the next."""
    monkeypatch.setattr(transport, "MAX_CONNECTIONS", 1)
    door = Door.build(door_kind)
    try:
        with anyio.fail_after(5):
            for _ in range(3):
                assert b"".join([chunk async for chunk in door.stream(f"{server.base}/bytes?n=10")]) == b"x" * 10
            assert (await door.post(f"{server.base}/hello")).status == 200
    finally:
        await door.aclose()
    assert server.hits["/bytes"] == 3
