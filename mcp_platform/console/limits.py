"""Rate limits on console runs: none, unless the tenant gives the console a limit of its own, a Client-scope rate
limit for the client id ``admin-console``. Then each console run is counted as a call of that client: against that
limit (all the tenant's admins together), and against the tenant-wide, ceiling and tool limits, as any client's call.

An admin trying a tool is not a client's traffic, so the console is not held to the default limit of every client;
a tenant that wants its admins' runs to share the tool's budget asks for it with the one row."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_core import jsonrpc
from mcp_platform.observe.calls import ADMIN_CONSOLE
from mcp_platform.quotas.check import limit_configs, rate_limits_check
from mcp_platform.quotas.models import RateLimit
from tenants.models import Tenant

# The client id a tenant's Client-scope limit names to limit console runs (the console's transport name).
CONSOLE_CLIENT_ID = ADMIN_CONSOLE


@dataclass(frozen=True)
class ConsoleLimit:
    """The console's own limit of a tenant, as the console page states it."""

    rate: int
    period: str
    burst: int


def console_limit(tenant: Tenant) -> ConsoleLimit | None:
    """The tenant's limit on console runs; None when console runs are not limited."""
    row = RateLimit.objects.filter(tenant=tenant, scope=RateLimit.Scope.CLIENT, client_id=CONSOLE_CLIENT_ID).first()
    if row is None:
        return None
    return ConsoleLimit(rate=row.rate, period=row.get_period_display(), burst=row.burst)


async def console_limits_check(*, tenant: Tenant, request: jsonrpc.Request) -> None:
    """Count one console request where the tenant limits the console. Raises ``RateLimited`` when a limit refuses
    it."""
    config = await limit_configs.get(tenant)
    if CONSOLE_CLIENT_ID not in config.clients:
        return
    await rate_limits_check(tenant=tenant, request=request, client_id=CONSOLE_CLIENT_ID, client_address="")
