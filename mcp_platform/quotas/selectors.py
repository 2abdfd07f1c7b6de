"""Reads of a tenant's rate limits, as the endpoint needs them: which buckets a request falls under."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_platform.quotas.buckets import Bucket
from mcp_platform.quotas.models import RateCeiling, RateLimit


@dataclass(frozen=True, slots=True)
class Allowance:
    rate: float  # tokens a second
    burst: int

    @classmethod
    def of(cls, row: RateLimit | RateCeiling) -> Allowance:
        return cls(rate=row.rate / row.period, burst=row.burst)


@dataclass(frozen=True)
class LimitConfig:
    """Every limit of one tenant. Empty when it has none: the endpoint then asks no bucket store at all."""

    tenant_id: int
    ceiling: Allowance | None = None
    tenant: Allowance | None = None
    client_default: Allowance | None = None
    clients: dict[str, Allowance] = field(default_factory=dict)
    tool_default: Allowance | None = None
    tools: dict[str, Allowance] = field(default_factory=dict)
    # By server id: the limit of all requests to that named server.
    servers: dict[int, Allowance] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (
            self.ceiling
            or self.tenant
            or self.client_default
            or self.clients
            or self.tool_default
            or self.tools
            or self.servers
        )

    def buckets(
        self, *, client: str, client_is_address: bool, tool: str | None, server_id: int | None = None
    ) -> list[Bucket]:
        """The buckets of one request by ``client`` (an OAuth client id, or an address on a public tenant), calling
        ``tool`` when it is a ``tools/call``, to the named server ``server_id`` (None: the default server)."""
        prefix = f"{{{self.tenant_id}}}"
        found: list[Bucket] = []
        if self.ceiling is not None:
            found.append(Bucket(f"{prefix}:ceiling", "ceiling", self.ceiling.rate, self.ceiling.burst))
        if self.tenant is not None:
            found.append(Bucket(f"{prefix}:tenant", "tenant", self.tenant.rate, self.tenant.burst))
        allowance = self.clients.get(client, self.client_default)
        if allowance is not None:
            # Addresses and client ids apart: a client id that reads like an address is not that address.
            kind = "ip" if client_is_address else "id"
            found.append(Bucket(f"{prefix}:client:{kind}:{client}", "client", allowance.rate, allowance.burst))
        if tool is not None:
            allowance = self.tools.get(tool, self.tool_default)
            if allowance is not None:
                found.append(Bucket(f"{prefix}:tool:{tool}", "tool", allowance.rate, allowance.burst))
        if server_id is not None:
            allowance = self.servers.get(server_id)
            if allowance is not None:
                found.append(Bucket(f"{prefix}:server:{server_id}", "server", allowance.rate, allowance.burst))
        return found


async def alimit_config(*, tenant_id: int) -> LimitConfig:
    """The tenant's limits as they are stored now (two queries)."""
    ceiling = await RateCeiling.objects.filter(tenant_id=tenant_id).afirst()
    tenant: Allowance | None = None
    client_default: Allowance | None = None
    tool_default: Allowance | None = None
    clients: dict[str, Allowance] = {}
    tools: dict[str, Allowance] = {}
    servers: dict[int, Allowance] = {}
    async for row in RateLimit.objects.filter(tenant_id=tenant_id):
        allowance = Allowance.of(row)
        if row.scope == RateLimit.Scope.TENANT:
            tenant = allowance
        elif row.scope == RateLimit.Scope.CLIENT and row.client_id:
            clients[row.client_id] = allowance
        elif row.scope == RateLimit.Scope.CLIENT:
            client_default = allowance
        elif row.scope == RateLimit.Scope.TOOL and row.tool_name:
            tools[row.tool_name] = allowance
        elif row.scope == RateLimit.Scope.TOOL:
            tool_default = allowance
        elif row.scope == RateLimit.Scope.SERVER and row.server_id is not None:
            servers[row.server_id] = allowance
    return LimitConfig(
        tenant_id=tenant_id,
        ceiling=Allowance.of(ceiling) if ceiling is not None else None,
        tenant=tenant,
        client_default=client_default,
        clients=clients,
        tool_default=tool_default,
        tools=tools,
        servers=servers,
    )
