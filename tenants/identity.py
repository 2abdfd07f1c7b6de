"""Who a tenant's MCP server says it is (``serverInfo``, instructions), wherever its requests are answered."""

from __future__ import annotations

import functools

from mcp_core.env import ServerIdentity
from mcp_infra.conf import platform_settings
from tenants.models import Tenant


def server_identity(tenant: Tenant) -> ServerIdentity:
    return _identity(
        platform_settings.SERVER_NAME, platform_settings.SERVER_VERSION, tenant.slug, tenant.name, tenant.instructions
    )


# Asked on every request; the same few tenants answer the same way until one of these values changes.
@functools.lru_cache(maxsize=4096)
def _identity(server: str, version: str, slug: str, name: str, instructions: str) -> ServerIdentity:
    return ServerIdentity(name=f"{server}/{slug}", version=version, title=name, instructions=instructions or None)
