"""The rate-limit check of the MCP endpoint: which buckets a request falls under, one atomic take, and the
``RateLimited`` refusal (HTTP 429 with ``Retry-After``) when one is empty.

A tenant's limits are read once per tenant revision and kept in this process (every change to them bumps the
revision, like a catalog change), so a tenant without limits costs no query and no Redis round trip.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings

from mcp_core import jsonrpc
from mcp_core.errors import RateLimited
from mcp_infra.telemetry import metrics
from mcp_platform.oauth.resource import PRINCIPAL_SCOPE_KEY, Principal
from mcp_platform.oauth.throttling import client_groups
from mcp_platform.quotas.buckets import BucketStore, MemoryBuckets, RedisBuckets
from mcp_platform.quotas.selectors import LimitConfig, alimit_config
from tenants.models import NAME_PATTERN, Server, Tenant

KEY_PREFIX = "mcp:ratelimit"
TOOL_NAME = re.compile(NAME_PATTERN)
# Tenants whose limits this process remembers; the least recently used is read again when next needed.
MAX_TENANTS = 1024


class LimitConfigCache:
    """Each tenant's ``LimitConfig`` as of one revision of the tenant row; never the truth (the row is)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[int, tuple[int, LimitConfig]] = OrderedDict()

    async def get(self, tenant: Tenant) -> LimitConfig:
        entry = self._entries.get(tenant.id)
        if entry is not None and entry[0] == tenant.revision:
            self._entries.move_to_end(tenant.id)
            return entry[1]
        config = await alimit_config(tenant_id=tenant.id)
        self._entries[tenant.id] = (tenant.revision, config)
        self._entries.move_to_end(tenant.id)
        while len(self._entries) > MAX_TENANTS:
            self._entries.popitem(last=False)
        return config

    def clear(self) -> None:
        self._entries.clear()


limit_configs = LimitConfigCache()
_store: BucketStore | None = None


def bucket_store() -> BucketStore:
    """Redis when ``REDIS_URL`` is set (several web processes share the buckets), else this process's memory
    (the embedded topology runs one web process)."""
    global _store
    if _store is None:
        _store = RedisBuckets(url=settings.REDIS_URL, prefix=KEY_PREFIX) if settings.REDIS_URL else MemoryBuckets()
    return _store


def use_bucket_store(store: BucketStore | None) -> None:
    """Replace the process's bucket store (tests give each their own); None goes back to the configured one."""
    global _store
    _store = store


def oauth_client_id(scope: Mapping[str, Any]) -> str:
    """The OAuth client id of the request's bearer token; "" on a public tenant."""
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    return principal.client_id if isinstance(principal, Principal) else ""


def rate_limit_client(*, client_id: str, client_address: str) -> tuple[str, bool]:
    """Who a client is for its limit, and whether that is an address: the OAuth client id, or on a public tenant
    the client's address (an IPv6 /64 counts as one, like the registration limits)."""
    if client_id:
        return client_id, False
    return client_groups(client_address)[0], True


async def rate_limits_check(
    *, tenant: Tenant, request: jsonrpc.Request, client_id: str, client_address: str, server: Server | None = None
) -> None:
    """Count one request by ``client_id`` (an OAuth client id; "" on a public tenant) from ``client_address`` to the
    tenant's server ``server`` (None: its default server) against the tenant's limits. Raises ``RateLimited`` when a
    limit refuses it."""
    config = await limit_configs.get(tenant)
    if config.empty:
        return
    client, is_address = rate_limit_client(client_id=client_id, client_address=client_address)
    params = request.params
    name = params.get("name") if request.method == "tools/call" and params else None
    # A name outside the tool-name rule names no tool (the call fails as unknown) and gets no bucket: buckets are
    # keyed by the name, and a client must not be able to make the store keep keys of any length it likes.
    tool = name if isinstance(name, str) and TOOL_NAME.fullmatch(name) else None
    buckets = config.buckets(
        client=client, client_is_address=is_address, tool=tool, server_id=server.pk if server is not None else None
    )
    refusal = await bucket_store().take(buckets)
    if refusal is None:
        return
    metrics.RATE_LIMITED.labels(tenant=tenant.slug, limit=refusal.limit).inc()
    raise RateLimited(
        f"Rate limit exceeded ({refusal.limit}); try again later", retry_after=refusal.retry_after, limit=refusal.limit
    )


async def rate_limits_check_requests(
    *,
    tenant: Tenant,
    client_id: str,
    client_address: str,
    requests: Iterable[jsonrpc.Request],
    server: Server | None = None,
) -> None:
    """``rate_limits_check`` for each request of a POST, in order (a batch refused part-way keeps what the requests
    before the refused one took). Raises ``RateLimited``."""
    for request in requests:
        await rate_limits_check(
            tenant=tenant, request=request, client_id=client_id, client_address=client_address, server=server
        )
