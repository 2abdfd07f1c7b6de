"""Per-process cache of servable tenants and of what their catalogs list, so the hot path stays off the ORM.

Never the truth: an entry is trusted for ``TENANT_CACHE_TTL`` seconds, then the tenant row is read again and the
catalog memo survives only if the row's ``revision`` (bumped in every writing transaction) is unchanged. Commits
on this process drop the tenant at once; other processes drop it when the channel-layer nudge arrives (the
gateway wires ``listen``). A lost nudge therefore costs at most one TTL of staleness.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mcp_core.caching import CacheHints
from mcp_core.catalog import Page, PromptDefinition, ToolDefinition
from tenants import selectors
from tenants.catalog import ServerCatalog, TenantCatalog
from tenants.models import Server, Tenant
from tenants.selection import ItemKind

# ``listen(tenant_id, on_nudge)`` arranges for ``on_nudge()`` to be called, on this event loop, whenever any
# process commits a change to that tenant; ``unlisten(tenant_id, on_nudge)`` undoes it.
Listen = Callable[[int, Callable[[], None]], Awaitable[None]]

MAX_TENANTS = 1024
# Catalog memo entries (pages and definitions) per tenant; a full memo starts again empty.
MAX_MEMO_ENTRIES = 4096
# The memo's entry holding the tenant's enabled servers by slug.
SERVERS = ("servers",)


@dataclass(frozen=True)
class CacheConfig:
    ttl: Callable[[], float]
    listen: Listen | None
    unlisten: Listen | None


@dataclass
class _Entry:
    tenant: Tenant
    epoch: int
    checked_at: float
    memo: dict[Hashable, Any] = field(default_factory=dict)


class TenantCache:
    """Servable tenants by slug with a bounded memo of their catalog reads, keyed by tenant everywhere."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        # Until configured, nothing is trusted for long: every lookup reads the tenant row again.
        self._ttl: Callable[[], float] = lambda: 0.0
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        # Bumped by every nudge or local commit for a tenant: an entry read before the bump is not trusted.
        self._epochs: dict[int, int] = {}
        self._listen: Listen | None = None
        self._unlisten: Listen | None = None
        self._listening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[int]] = weakref.WeakKeyDictionary()
        # Reads of a known tenant's row in flight, by (event loop, slug, the tenant's epoch when the read began).
        self._reading: dict[tuple[asyncio.AbstractEventLoop, str, int], asyncio.Future[Tenant | None]] = {}

    def configure(self, *, ttl: Callable[[], float], listen: Listen | None, unlisten: Listen | None) -> None:
        """How long an entry is trusted without a nudge, and how to hear other processes' commits (the gateway
        passes its settings and its channel-layer mailbox)."""
        self._ttl, self._listen, self._unlisten = ttl, listen, unlisten

    @property
    def config(self) -> CacheConfig:
        return CacheConfig(ttl=self._ttl, listen=self._listen, unlisten=self._unlisten)

    # ---- tenants -----------------------------------------------------------------------------------------

    async def servable(self, slug: str) -> Tenant | None:
        """The active tenant called ``slug`` (None when missing or suspended), from memory while fresh."""
        entry = self._entries.get(slug)
        if entry is None:
            return await self._load(slug, entry)
        epoch = self._epochs.get(entry.tenant.id, 0)
        if entry.epoch == epoch and self._clock() - entry.checked_at < self._ttl():
            return entry.tenant
        # One read per expiry, not one per request: every request in flight when a known tenant's entry runs out
        # would otherwise queue its own read on the ORM's single thread and all of them wait for the last (50-90
        # ms every TTL at c=16). A request joins a read only if no nudge came since it started (same epoch), so a
        # change committed before a request arrived is still read by it.
        key = (asyncio.get_running_loop(), slug, epoch)
        reading = self._reading.get(key)
        if reading is None:
            reading = self._reading[key] = asyncio.ensure_future(self._load(slug, entry))
            reading.add_done_callback(partial(self._read_done, key))
        return await asyncio.shield(reading)

    def _read_done(self, key: tuple[asyncio.AbstractEventLoop, str, int], reading: asyncio.Future[Any]) -> None:
        if self._reading.get(key) is reading:
            del self._reading[key]
        if not reading.cancelled():
            reading.exception()  # retrieved: each waiter has raised it already, or none was left to

    def forget(self, tenant_id: int) -> None:
        """Drop everything known about the tenant; called after a commit that changed it (here or elsewhere)."""
        self._epochs[tenant_id] = self._epochs.get(tenant_id, 0) + 1
        for slug in [slug for slug, entry in self._entries.items() if entry.tenant.id == tenant_id]:
            del self._entries[slug]

    def tenant_revisions(self) -> dict[int, int]:
        """The tenants this process serves (cached) and the revision each was read at, for the revision check of
        embedded defaults."""
        return {entry.tenant.id: entry.tenant.revision for entry in self._entries.values()}

    def clear(self) -> None:
        self._entries.clear()
        self._epochs.clear()

    def catalog(
        self, tenant: Tenant, granted: frozenset[str] | None = None, server: Server | None = None
    ) -> TenantCatalog:
        """The tenant's catalog as a caller holding ``granted`` scopes sees it (``TenantCatalog``), or the part of it
        ``server`` selects (``ServerCatalog``); memoised when ``tenant`` is the one this cache handed out, else read
        through."""
        entry = self._entries.get(tenant.slug)
        if entry is None or entry.tenant is not tenant:
            return TenantCatalog(tenant, granted) if server is None else ServerCatalog(tenant, server, granted)
        if server is None:
            return CachedCatalog(tenant, entry.memo, granted)
        return CachedServerCatalog(tenant, server, entry.memo, granted)

    async def server(self, tenant: Tenant, slug: str) -> Server | None:
        """The tenant's enabled server called ``slug`` (None when there is none), from the memo of the tenant's
        revision when ``tenant`` is the one this cache handed out: one query per revision for all its servers."""
        entry = self._entries.get(tenant.slug)
        if entry is None or entry.tenant is not tenant:
            return (await selectors.aservers_servable(tenant=tenant)).get(slug)
        servers: dict[str, Server] = await _remembered(
            entry.memo, SERVERS, lambda: selectors.aservers_servable(tenant=tenant)
        )
        return servers.get(slug)

    async def _load(self, slug: str, previous: _Entry | None) -> Tenant | None:
        tenant_id = previous.tenant.id if previous is not None else None
        row = None
        if tenant_id is None:
            row = await selectors.atenant_get_servable(slug=slug)
            if row is None:
                return None
            tenant_id = row.id
        if await self._ensure_listening(tenant_id):
            row = None  # a change may have committed before the subscription took effect: read again
        # Taken before the read: a nudge that lands while the read is in flight leaves the entry untrusted.
        epoch = self._epochs.get(tenant_id, 0)
        checked_at = self._clock()
        if row is None:
            row = await selectors.atenant_get_servable(slug=slug)
        if row is None:
            self._entries.pop(slug, None)
            return None
        same = previous is not None and previous.tenant.id == row.pk and previous.tenant.revision == row.revision
        memo = previous.memo if same and previous is not None else {}
        self._entries[slug] = _Entry(tenant=row, epoch=epoch, checked_at=checked_at, memo=memo)
        self._entries.move_to_end(slug)
        while len(self._entries) > MAX_TENANTS:
            _, evicted = self._entries.popitem(last=False)
            await self._stop_listening(evicted.tenant.id)
        return row

    async def _ensure_listening(self, tenant_id: int) -> bool:
        """Subscribe to the tenant's nudges on this loop; True when the subscription is new."""
        if self._listen is None:
            return False
        listening = self._listening.setdefault(asyncio.get_running_loop(), set())
        if tenant_id in listening:
            return False
        listening.add(tenant_id)
        # The gateway's listen (the process mailbox) never raises for the channel layer: a membership it could not
        # take is taken again when Redis is back, and meanwhile an entry is trusted for one TTL at most.
        await self._listen(tenant_id, self._nudged(tenant_id))
        return True

    async def _stop_listening(self, tenant_id: int) -> None:
        listening = self._listening.get(asyncio.get_running_loop(), set())
        if self._unlisten is not None and tenant_id in listening and not self._still_cached(tenant_id):
            listening.discard(tenant_id)
            await self._unlisten(tenant_id, self._nudged(tenant_id))

    def _still_cached(self, tenant_id: int) -> bool:
        return any(entry.tenant.id == tenant_id for entry in self._entries.values())

    def _nudged(self, tenant_id: int) -> Callable[[], None]:
        return _Nudge(self, tenant_id)


@dataclass(frozen=True)
class _Nudge:
    """``forget(tenant_id)`` as a hashable callback, so the same subscription can be removed again."""

    cache: TenantCache
    tenant_id: int

    def __call__(self) -> None:
        self.cache.forget(self.tenant_id)


class CachedCatalog(TenantCatalog):
    """``TenantCatalog`` whose lists and definitions are remembered in the tenant's memo.

    The memo belongs to one revision of the tenant: a changed revision starts a new one. Cached pages and
    definitions are shared by concurrent requests and must not be mutated (mcp_core builds new results).
    """

    def __init__(self, tenant: Tenant, memo: dict[Hashable, Any], granted: frozenset[str] | None = None) -> None:
        super().__init__(tenant, granted)
        self._memo = memo

    async def _remember(self, key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
        return await _remembered(self._memo, key, load)

    async def list_cache_limits(self) -> dict[str, CacheHints]:
        # One read per revision for all four lists: the upstreams' hints change only with a new revision.
        limits: dict[str, CacheHints] = await self._remember(
            ("list cache limits",), lambda: TenantCatalog.list_cache_limits(self)
        )
        return limits

    async def list_tools(self, *, after: str | None, limit: int) -> Page:
        page: Page = await self._remember(
            # Which tools a page holds depends on the caller's scopes.
            ("tools", after, limit, self.granted),
            lambda: TenantCatalog.list_tools(self, after=after, limit=limit),
        )
        return page

    async def get_tool(self, name: str) -> ToolDefinition | None:
        tool: ToolDefinition | None = await self._remember(
            ("tool", name, self.granted), lambda: TenantCatalog.get_tool(self, name)
        )
        return tool

    async def list_resources(self, *, after: str | None, limit: int) -> Page:
        page: Page = await self._remember(
            ("resources", after, limit), lambda: TenantCatalog.list_resources(self, after=after, limit=limit)
        )
        return page

    async def list_resource_templates(self, *, after: str | None, limit: int) -> Page:
        page: Page = await self._remember(
            ("templates", after, limit), lambda: TenantCatalog.list_resource_templates(self, after=after, limit=limit)
        )
        return page

    async def list_prompts(self, *, after: str | None, limit: int) -> Page:
        page: Page = await self._remember(
            ("prompts", after, limit), lambda: TenantCatalog.list_prompts(self, after=after, limit=limit)
        )
        return page

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        prompt: PromptDefinition | None = await self._remember(
            ("prompt", name), lambda: TenantCatalog.get_prompt(self, name)
        )
        return prompt


async def _remembered(memo: dict[Hashable, Any], key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return memo[key]
    except KeyError:
        pass
    value = await load()
    if len(memo) >= MAX_MEMO_ENTRIES:
        memo.clear()
    memo[key] = value
    return value


class CachedServerCatalog(CachedCatalog, ServerCatalog):
    """``ServerCatalog`` whose lists, definitions, members and digests are remembered in the tenant's memo under the
    server's own keys (the server is part of the tenant's revision: a change to it starts a new memo)."""

    def __init__(
        self, tenant: Tenant, server: Server, memo: dict[Hashable, Any], granted: frozenset[str] | None = None
    ) -> None:
        ServerCatalog.__init__(self, tenant, server, granted)
        self._memo = memo
        self._server_key = ("server", server.pk)

    async def _remember(self, key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
        return await _remembered(self._memo, (self._server_key, key), load)

    async def _among(self, kind: ItemKind) -> frozenset[str] | None:
        members: frozenset[str] = await self._remember(("members", kind), lambda: ServerCatalog._among(self, kind))
        return members

    async def list_digest(self, kind: str) -> str:
        digest: str = await self._remember(
            ("digest", kind, self.granted), lambda: ServerCatalog.list_digest(self, kind)
        )
        return digest


tenant_cache = TenantCache()
