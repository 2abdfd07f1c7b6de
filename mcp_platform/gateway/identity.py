"""Who a tenant's MCP server says it is (``serverInfo``, instructions), wherever its requests are answered."""

from __future__ import annotations

from mcp_core.env import ServerIdentity
from mcp_platform.conf import platform_settings
from tenants.models import Tenant


def server_identity(tenant: Tenant) -> ServerIdentity:
    return ServerIdentity(
        name=f"{platform_settings.SERVER_NAME}/{tenant.slug}",
        version=platform_settings.SERVER_VERSION,
        title=tenant.name,
        instructions=tenant.instructions or None,
    )
