"""Hourly limits on anonymous work (client registration, metadata-document first sights), keyed by client address
and network, so that no one can lock everyone else out; and on token exchanges and introspections, keyed by the
authenticated client.

Counters live in the shared cache (Redis on the production path), so a limit holds across web processes; windows
are clock hours, so every process agrees on when one ends (the ``Retry-After`` of a refusal). The client's address
is the peer's, unless the peer is a trusted reverse proxy (``MCP_PLATFORM["TRUSTED_PROXIES"]``): then it is the
nearest untrusted hop of ``X-Forwarded-For``, read from the right, since a client can write anything it likes to
the left of what the proxies append.

Who counts as one client: an IPv4 address or an IPv6 /64 (what one machine or line gets); as one network: an IPv4
/24 or an IPv6 /56 (what one site or subscriber gets). Each has its own hourly limit. The platform-wide figure is
not a cap anyone can exhaust: past it the platform is under load, and each network may then register only a few
clients an hour (``DCR_PER_NETWORK_UNDER_LOAD``). Networks flooding it are refused, and people on other networks
still get in.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from django.core.cache import cache

from mcp_infra.conf import platform_settings

WINDOW_SECONDS = 3600
# A counter outlives its hour a little, so a clock slightly behind another process's still finds it.
KEY_SLACK_SECONDS = 60
IPV4_NETWORK_PREFIX = 24
IPV6_CLIENT_PREFIX = 64
IPV6_NETWORK_PREFIX = 56

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(value: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


@functools.lru_cache(maxsize=4)
def _networks(spec: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(n, strict=False) for n in spec)


def _trusted(address: IPAddress) -> bool:
    networks = _networks(tuple(platform_settings.TRUSTED_PROXIES))
    return any(address.version == network.version and address in network for network in networks)


@functools.lru_cache(maxsize=4096)
def _peer(peer_text: str, trusted_proxies: tuple[str, ...]) -> tuple[IPAddress | None, bool]:
    """The peer's address and whether it is a trusted proxy (remembered: most requests come from few peers)."""
    peer = _address(peer_text)
    return peer, peer is not None and _trusted(peer)


def _nearest_untrusted(peer_text: str, forwarded_for: Callable[[], str]) -> str:
    """The peer, or behind trusted proxies the nearest untrusted hop of ``X-Forwarded-For`` (read only then)."""
    peer, trusted = _peer(peer_text, tuple(platform_settings.TRUSTED_PROXIES))
    if peer is None:
        return "unknown"
    if not trusted:
        return str(peer)
    hops = [hop for hop in forwarded_for().split(",") if hop.strip()]
    nearest = peer
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            break  # a malformed hop: believe nothing further left of it
        nearest = address
        if not _trusted(address):
            break
    return str(nearest)


def client_address(meta: Mapping[str, Any]) -> str:
    """The client's address from a request's ``META`` (Django) or headers (oauthlib, which copies ``META``)."""
    return _nearest_untrusted(str(meta.get("REMOTE_ADDR") or ""), lambda: str(meta.get("HTTP_X_FORWARDED_FOR") or ""))


def asgi_client_address(scope: Mapping[str, Any]) -> str:
    """``client_address`` of an ASGI request (the MCP endpoint's consumers have no ``META``). Every MCP request
    asks, so the headers are searched only behind a trusted proxy."""
    peer = scope.get("client") or ("", 0)

    def forwarded_for() -> str:
        values = [value for name, value in scope.get("headers", ()) if name.lower() == b"x-forwarded-for"]
        return b",".join(values).decode("latin-1")

    return _nearest_untrusted(str(peer[0]), forwarded_for)


def client_groups(address: str) -> tuple[str, str]:
    """The client and network buckets of ``address`` (see the module docstring); unknown addresses share one."""
    ip = _address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip is None:
        return "unknown", "unknown"
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip), str(ipaddress.ip_network(f"{ip}/{IPV4_NETWORK_PREFIX}", strict=False))
    client = ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False)
    return str(client), str(ipaddress.ip_network(f"{ip}/{IPV6_NETWORK_PREFIX}", strict=False))


def _count(key: str) -> int:
    """Count one event against ``key`` (already naming its window); the new count."""
    cache.add(key, 0, WINDOW_SECONDS + KEY_SLACK_SECONDS)
    try:
        count: int = cache.incr(key)
    except ValueError:  # the key expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS + KEY_SLACK_SECONDS)
        count = 1
    return count


def registration_refused(meta: Mapping[str, Any], kind: str, *, now: float | None = None) -> int | None:
    """Count one anonymous registration of ``kind`` ("dcr", "cimd"); None when it may go ahead, else the
    seconds until the caller may try again (the end of the current hour).

    Each kind has its own client and network buckets; the platform-wide count of admitted ones is shared.
    """
    moment = time.time() if now is None else now
    window = int(moment // WINDOW_SECONDS)
    retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - moment))
    client, network = client_groups(client_address(meta))
    per_client = _count(f"oauth:{kind}:client:{client}:{window}")
    per_network = _count(f"oauth:{kind}:network:{network}:{window}")
    if (
        per_client > platform_settings.DCR_PER_ADDRESS_PER_HOUR
        or per_network > platform_settings.DCR_PER_NETWORK_PER_HOUR
    ):
        return retry_after
    platform_key = f"oauth:registrations:all:{window}"
    under_load = int(cache.get(platform_key) or 0) >= platform_settings.DCR_PLATFORM_PER_HOUR
    if under_load and per_network > platform_settings.DCR_PER_NETWORK_UNDER_LOAD:
        return retry_after
    _count(platform_key)
    return None


def _per_client_refused(kind: str, client_pk: int, limit: int, now: float | None) -> int | None:
    moment = time.time() if now is None else now
    window = int(moment // WINDOW_SECONDS)
    if _count(f"oauth:{kind}:client:{client_pk}:{window}") <= limit:
        return None
    return max(1, math.ceil((window + 1) * WINDOW_SECONDS - moment))


def token_exchange_refused(*, client_pk: int, now: float | None = None) -> int | None:
    """Count one token exchange (RFC 8693) by the authenticated client ``client_pk``; None when it may go ahead,
    else the seconds until it may try again (the end of the current hour). Bounds what a runaway or stolen client
    can mint: ``TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR``."""
    return _per_client_refused("exchange", client_pk, platform_settings.TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR, now)


def token_introspection_refused(*, client_pk: int, now: float | None = None) -> int | None:
    """Count one token introspection (RFC 7662) by the authenticated client ``client_pk``, as
    ``token_exchange_refused`` does exchanges: ``TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR``. Bounds how fast a
    stolen client secret can test guessed or stolen tokens."""
    return _per_client_refused(
        "introspection", client_pk, platform_settings.TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR, now
    )
