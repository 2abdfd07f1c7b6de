"""The one outbound door: the address policy and the pooled httpx client for every request the platform makes on a
tenant's behalf (HTTP tools, OpenAPI fetches, upstream MCP servers) and for client metadata documents.

Only public addresses unless a network is allowed (the platform's ``OUTBOUND_ALLOWED_NETWORKS``, a tenant's
staff-set ``outbound_allowed_networks``); the connection goes to the address that was checked (one lookup, so no
DNS rebinding; TLS and Host keep the name); each redirect hop is checked again; time and size are bounded.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import anyio
import httpcore
import httpx

from mcp_infra.conf import platform_settings
from mcp_infra.telemetry import spans

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# How a host name becomes addresses; a seam so tests decide what a name resolves to.
Resolve = Callable[[str, int], Awaitable[list[str]]]

MAX_REDIRECTS = 5
USER_AGENT = "mcp-platform (outbound)"
# RFC 6052's well-known NAT64 prefix: its addresses carry an IPv4 address in their last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class OutboundRefused(httpx.TransportError):
    """The policy refused a request: the message says which host or address and why (never a header or body)."""


class OutboundResponseTooLarge(httpx.TransportError):
    """A response body passed its size limit; ``partial`` holds the first ``limit`` bytes."""

    def __init__(self, limit: int, partial: bytes = b"", *, request: httpx.Request | None = None) -> None:
        super().__init__(f"response body larger than {limit} bytes", request=request)
        self.limit = limit
        self.partial = partial


# ---- the address policy ----------------------------------------------------------------------------------------


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches in the end (mapped, 6to4, Teredo client, NAT64, compatible)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _category(ip: IPAddress) -> str | None:
    # Python calls some special ranges global (multicast, reserved); they are refused all the same.
    for name, flag in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("not globally routable", not ip.is_global),
    ):
        if flag:
            return name
    return None


def non_public_reason(address: str | IPAddress) -> str | None:
    """Why ``address`` is not a public address ("private", "loopback", "link-local", ...), or None when it is.

    An IPv6 address that embeds an IPv4 one is judged by both: ``::ffff:127.0.0.1`` is loopback.
    """
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and (embedded := _embedded_ipv4(ip)) is not None:
        inner = _category(embedded)
        if inner is not None:
            return f"{inner} IPv4 {embedded} inside IPv6"
    return _category(ip)


@functools.lru_cache(maxsize=256)
def parse_networks(values: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """CIDRs as networks (the system check and the tenant validation have refused malformed ones)."""
    return tuple(ipaddress.ip_network(value, strict=False) for value in values)


def _inside(address: str, networks: Sequence[IPNetwork]) -> bool:
    ip = ipaddress.ip_address(address)
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address) and (embedded := _embedded_ipv4(ip)) is not None:
        candidates.append(embedded)
    return any(c.version == n.version and c in n for c in candidates for n in networks)


def platform_networks(extra: Iterable[str] = ()) -> tuple[IPNetwork, ...]:
    """The deployment's allowed networks (``OUTBOUND_ALLOWED_NETWORKS``) plus ``extra``."""
    return parse_networks((*platform_settings.OUTBOUND_ALLOWED_NETWORKS, *extra))


def refusal(host: str, address: str, networks: Sequence[IPNetwork]) -> str | None:
    """Why a connection to ``address`` (``host`` resolved to it) is refused, or None when it may go ahead."""
    reason = non_public_reason(address)
    if reason is None or _inside(address, networks):
        return None
    shown = address if _literal(host) == address else f"{host} -> {address}"
    return f"refused: {shown} ({reason}) is not an allowed network"


def check_addresses(host: str, addresses: Sequence[str], networks: Sequence[IPNetwork]) -> None:
    """Raise ``OutboundRefused`` when any address is refused: with a mixed answer, one private address refuses the
    host, or a later connection attempt (or the next lookup) would reach it."""
    for address in addresses:
        reason = refusal(host, address, networks)
        if reason is not None:
            raise OutboundRefused(reason)


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


def _unique(infos: Iterable[Any]) -> list[str]:
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]  # an IPv6 zone is not part of the address we check
        if address not in addresses:
            addresses.append(address)
    return addresses


def resolve_checked_sync(host: str, port: int, *, extra_networks: Iterable[str] = ()) -> list[str]:
    """Every address of ``host``, checked (blocking lookup, for synchronous callers such as the client-metadata
    fetch). Raises ``OutboundRefused``, and ``OSError`` when the name does not resolve."""
    literal = _literal(host)
    addresses = [literal] if literal else _unique(socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP))
    if not addresses:
        raise OSError(f"{host} did not resolve to any address")
    check_addresses(host, addresses, platform_networks(extra_networks))
    return addresses


async def system_resolve(host: str, port: int) -> list[str]:
    """The system resolver, without blocking the event loop."""
    return _unique(await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM))


TenantNetworks = Callable[[int], Awaitable[tuple[str, ...]]]


async def _no_tenant_networks(tenant_id: int) -> tuple[str, ...]:
    return ()


# The door knows no tenant: the tenants app registers, at start-up, how to read the extra networks platform staff
# allowed one (``register_tenant_networks``).
_tenant_networks: TenantNetworks = _no_tenant_networks


def register_tenant_networks(reader: TenantNetworks) -> None:
    """Install how the door reads the extra networks a tenant may reach (called once, at ``ready()``)."""
    global _tenant_networks
    _tenant_networks = reader


async def tenant_networks(tenant_id: int) -> tuple[str, ...]:
    """The extra networks platform staff allowed ``tenant_id`` (read when a non-public address is met, so a change
    applies to the next connection)."""
    return await _tenant_networks(tenant_id)


# ---- the transport ---------------------------------------------------------------------------------------------


StreamT = TypeVar("StreamT")


async def connect_first(
    addresses: Sequence[str],
    timeout: float | None,
    connect: Callable[[str, float | None], Awaitable[StreamT]],
    *,
    retry_on: tuple[type[Exception], ...],
    timed_out: Exception,
) -> StreamT:
    """Connect to the first of the checked ``addresses`` that answers within ``timeout`` overall (the httpcore and
    httpcore2 backends both connect this way). Raises the last connection error, or ``timed_out``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    failure: Exception | None = None
    for address in addresses:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            break
        try:
            return await connect(address, remaining)
        except retry_on as exc:
            failure = exc
    raise failure if failure is not None else timed_out


class CheckedNetworkBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the policy in ``connect_tcp``: resolve once, check every address, connect to
    a checked one. Pooled connections are per host name, so each new connection (each new redirect host) is
    checked, and nothing can swap the address between the check and the connection."""

    def __init__(self, *, tenant_id: int | None, resolve: Resolve) -> None:
        self.tenant_id = tenant_id
        self.resolve = resolve
        self._inner = httpcore.AnyIOBackend()

    async def checked_addresses(self, host: str, port: int) -> list[str]:
        """Raises ``OutboundRefused`` and ``httpcore.ConnectError`` (the name does not resolve)."""
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = await self.resolve(host, port)
            except OSError as exc:
                raise httpcore.ConnectError(f"could not resolve {host}: {exc}") from None
            if not addresses:
                raise httpcore.ConnectError(f"{host} did not resolve to any address")
        networks = platform_networks()
        if self.tenant_id is not None and any(refusal(host, a, networks) for a in addresses):
            networks = platform_networks(await tenant_networks(self.tenant_id))
        check_addresses(host, addresses, networks)
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.checked_addresses(host, port)
        return await connect_first(
            addresses,
            timeout,
            lambda address, remaining: self._inner.connect_tcp(address, port, remaining, local_address, socket_options),
            retry_on=(httpcore.ConnectError, httpcore.ConnectTimeout),
            timed_out=httpcore.ConnectTimeout(f"timed out connecting to {host}"),
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise OutboundRefused("refused: Unix sockets are not reachable through the outbound door")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request: httpx.Request) -> None:
        self._inner = inner
        self._limit = limit
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise OutboundResponseTooLarge(self._limit, request=self._request)
            yield chunk

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
        self.backend = CheckedNetworkBackend(tenant_id=tenant_id, resolve=resolve or system_resolve)
        # No proxies from the environment: a proxy would make the connection somewhere the policy never saw.
        self._inner = httpx.AsyncHTTPTransport(verify=verify, trust_env=False)
        # httpx takes no network backend; its pool is rebuilt the way httpx builds it, with ours. A test that
        # resolves names only through the ``resolve`` seam proves this still holds after an httpx upgrade.
        self._inner._pool = httpcore.AsyncConnectionPool(
            ssl_context=self._inner._pool._ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=self.backend,
        )

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
