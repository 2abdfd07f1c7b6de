"""Who a tenant's MCP server says it is (``serverInfo``, instructions), wherever its requests are answered: the
tenant's default server, or one of its named servers (``tenants.models.Server``)."""

from __future__ import annotations

import functools

from mcp_core.env import ServerIdentity
from mcp_infra.conf import platform_settings
from tenants.models import Server, Tenant


def server_identity(tenant: Tenant, server: Server | None = None) -> ServerIdentity:
    if server is None:
        return _identity(
            platform_settings.SERVER_NAME,
            platform_settings.SERVER_VERSION,
            tenant.slug,
            tenant.name,
            tenant.instructions,
        )
    return _identity(
        platform_settings.SERVER_NAME,
        platform_settings.SERVER_VERSION,
        f"{tenant.slug}/{server.slug}",
        server.title or f"{tenant.name}: {server.slug}",
        server.instructions,
    )


# Asked on every request; the same few tenants answer the same way until one of these values changes.
@functools.lru_cache(maxsize=4096)
def _identity(server: str, version: str, slug: str, name: str, instructions: str) -> ServerIdentity:
    return ServerIdentity(name=f"{server}/{slug}", version=version, title=name, instructions=instructions or None)
