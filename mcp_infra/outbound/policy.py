"""The door's address policy: which addresses a request may reach (public ones, and the networks the deployment or
platform staff allowed), how a host name becomes checked addresses (one lookup, every address checked), and the
extra networks of a tenant, read through a reader the tenant domain registers at start-up.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio
import httpx

from mcp_infra.conf import platform_settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# How a host name becomes addresses; a seam so tests decide what a name resolves to.
Resolve = Callable[[str, int], Awaitable[list[str]]]

# RFC 6052's well-known NAT64 prefix: its addresses carry an IPv4 address in their last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class OutboundRefused(httpx.TransportError):
    """The policy refused a request: the message says which host or address and why (never a header or body)."""


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


async def checked_addresses(host: str, port: int, *, tenant_id: int | None, resolve: Resolve) -> list[str]:
    """The addresses a new connection to ``host`` may go to: resolved once, every one checked against the platform's
    networks (and ``tenant_id``'s extra ones, read only when a non-public address is met, so a change applies to the
    next connection). Raises ``OutboundRefused``, and ``OSError`` when the name does not resolve."""
    literal = _literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await resolve(host, port)
        except OSError as exc:
            raise OSError(f"could not resolve {host}: {exc}") from None
        if not addresses:
            raise OSError(f"{host} did not resolve to any address")
    networks = platform_networks()
    if tenant_id is not None and any(refusal(host, a, networks) for a in addresses):
        networks = platform_networks(await tenant_networks(tenant_id))
    check_addresses(host, addresses, networks)
    return addresses
