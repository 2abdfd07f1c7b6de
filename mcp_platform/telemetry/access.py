"""Who may read what the platform tells its operators (``/metrics``, the health probes' details): whoever presents
``MCP_METRICS_TOKEN`` as a bearer token (compared in constant time), and loopback clients, judged on the client
address the rate limits use (behind a trusted proxy the forwarded address, so a public client coming through a
proxy on the same machine is not loopback)."""

from __future__ import annotations

import hmac
import ipaddress

from mcp_infra.conf import platform_settings


def presents_metrics_token(authorization: str) -> bool:
    """Whether the ``Authorization`` header carries the configured metrics token (never, when none is set)."""
    token = platform_settings.METRICS_TOKEN
    scheme, _, presented = authorization.partition(" ")
    return (
        bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())
    )


def is_loopback(address: str) -> bool:
    """Whether ``address`` (the client's, as ``oauth.throttling`` finds it) is a loopback address."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback
