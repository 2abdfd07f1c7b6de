"""The one outbound door: every request the platform makes on a tenant's behalf (HTTP tools, OpenAPI fetches,
upstream MCP servers) and for client metadata documents goes through it.

Only public addresses unless a network is allowed (the platform's ``OUTBOUND_ALLOWED_NETWORKS``, a tenant's
staff-set ``outbound_allowed_networks``); the connection goes to the address that was checked (one lookup, so no
DNS rebinding; TLS and Host keep the name); each redirect hop is checked again; time and size are bounded.

The package holds:

- ``policy``: which addresses may be reached, how a name becomes checked addresses, a tenant's extra networks
  (read through the reader the tenant domain registers with ``register_tenant_networks``);
- ``transport``: what every client shares: the checked connect (``connect_first``, the network backend for
  ``httpcore`` and ``httpcore2``), the rebuilt pool, the size cap;
- ``httpx_client``: the pooled ``httpx`` client per event loop and tenant, ``read_capped``;
- ``httpx2``: the door for ``httpx2`` clients (the MCP SDK's transports);
- ``lean``: the lean HTTP/1.1 client (asyncio + ``httptools``) for the hot path of upstream calls.

This module re-exports what the rest of the code imports; ``httpx2`` and ``lean`` are imported by name.
"""

from mcp_infra.outbound.httpx_client import (
    MAX_REDIRECTS,
    OutboundResponseTooLarge,
    OutboundTransport,
    build_outbound_client,
    outbound_client,
    outbound_clients_close,
    read_capped,
)
from mcp_infra.outbound.policy import (
    IPNetwork,
    OutboundRefused,
    Resolve,
    check_addresses,
    checked_addresses,
    non_public_reason,
    platform_networks,
    register_tenant_networks,
    resolve_checked_sync,
    system_resolve,
    tenant_networks,
)
from mcp_infra.outbound.transport import USER_AGENT, CheckedNetworkBackend, connect_first

__all__ = [
    "MAX_REDIRECTS",
    "USER_AGENT",
    "CheckedNetworkBackend",
    "IPNetwork",
    "OutboundRefused",
    "OutboundResponseTooLarge",
    "OutboundTransport",
    "Resolve",
    "build_outbound_client",
    "check_addresses",
    "checked_addresses",
    "connect_first",
    "non_public_reason",
    "outbound_client",
    "outbound_clients_close",
    "platform_networks",
    "read_capped",
    "register_tenant_networks",
    "resolve_checked_sync",
    "system_resolve",
    "tenant_networks",
]
