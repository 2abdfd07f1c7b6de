"""Hourly limits on anonymous work (client registration, metadata-document fetches), keyed by client address.

Counters live in the shared cache (Redis on the production path), so a limit holds across web processes. The
client's address is the peer's, unless the peer is a trusted reverse proxy (``MCP_PLATFORM["TRUSTED_PROXIES"]``):
then it is the nearest untrusted hop of ``X-Forwarded-For``, read from the right, since a client can write
anything it likes to the left of what the proxies append.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from django.core.cache import cache

from mcp_platform.conf import platform_settings

WINDOW_SECONDS = 3600

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(value: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


def _trusted(address: IPAddress) -> bool:
    networks = (ipaddress.ip_network(n, strict=False) for n in platform_settings.TRUSTED_PROXIES)
    return any(address.version == network.version and address in network for network in networks)


def client_address(meta: Mapping[str, Any]) -> str:
    """The client's address from a request's ``META`` (Django) or headers (oauthlib, which copies ``META``)."""
    peer = _address(str(meta.get("REMOTE_ADDR") or ""))
    if peer is None:
        return "unknown"
    if not _trusted(peer):
        return str(peer)
    hops = [hop for hop in str(meta.get("HTTP_X_FORWARDED_FOR") or "").split(",") if hop.strip()]
    nearest = peer
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            break  # a malformed hop: believe nothing further left of it
        nearest = address
        if not _trusted(address):
            break
    return str(nearest)


def asgi_client_address(scope: Mapping[str, Any]) -> str:
    """``client_address`` of an ASGI request (the MCP endpoint's consumers have no ``META``)."""
    peer = scope.get("client") or ("", 0)
    forwarded = b",".join(value for name, value in scope.get("headers", ()) if name.lower() == b"x-forwarded-for")
    return client_address({"REMOTE_ADDR": peer[0], "HTTP_X_FORWARDED_FOR": forwarded.decode("latin-1")})


def over_limit(key: str, limit: int) -> bool:
    """Count one event against ``key`` in the current window; True when it passes ``limit``."""
    cache.add(key, 0, WINDOW_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:  # the key expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS)
        count = 1
    return count > limit


def registration_refused(meta: Mapping[str, Any], kind: str) -> bool:
    """Count one anonymous registration of ``kind`` ("dcr", "cimd"); True when the caller is over a limit.

    Each kind has its own per-address bucket; the platform-wide bucket is shared.
    """
    per_address = over_limit(f"oauth:{kind}:addr:{client_address(meta)}", platform_settings.DCR_PER_ADDRESS_PER_HOUR)
    return per_address or over_limit("oauth:registrations:all", platform_settings.DCR_PLATFORM_PER_HOUR)
