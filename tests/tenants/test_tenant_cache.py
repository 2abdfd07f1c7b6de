"""The per-process tenant cache: fresh entries cost no query, the durable revision decides after the TTL (so a
lost nudge costs one TTL at most), nudges and local commits drop a tenant at once, and memos are per tenant."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction

from tenants import services
from tenants.cache import CachedCatalog, TenantCache, tenant_cache
from tenants.catalog import TenantCatalog
from tenants.models import Tenant
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db(transaction=True)

TTL = 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Nudges:
    """Stands in for the channel layer: remembers each tenant's callback so a test can deliver (or lose) a nudge."""

    def __init__(self) -> None:
        self.callbacks: dict[int, Callable[[], None]] = {}

    async def listen(self, tenant_id: int, on_nudge: Callable[[], None]) -> None:
        self.callbacks[tenant_id] = on_nudge

    async def unlisten(self, tenant_id: int, on_nudge: Callable[[], None]) -> None:
        self.callbacks.pop(tenant_id, None)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def nudges() -> Nudges:
    return Nudges()


@pytest.fixture
def other_process(clock: Clock, nudges: Nudges) -> TenantCache:
    """A cache like another web process's: this process's commits reach it only through ``nudges``."""
    cache = TenantCache(clock=clock)
    cache.configure(ttl=lambda: TTL, listen=nudges.listen, unlisten=nudges.unlisten)
    return cache


def servable(cache: TenantCache, slug: str) -> Tenant | None:
    return async_to_sync(cache.servable)(slug)


def tool_description(cache: TenantCache, slug: str, name: str) -> str | None:
    async def read() -> str | None:
        tenant = await cache.servable(slug)
        assert tenant is not None
        tool = await cache.catalog(tenant).get_tool(name)
        return None if tool is None else str(tool.wire["description"])

    return async_to_sync(read)()


def test_a_fresh_tenant_and_its_tool_cost_no_query(
    other_process: TenantCache, tenant: Tenant, django_assert_num_queries: Any
) -> None:
    ToolFactory(tenant=tenant, name="lookup", description="v1")
    assert tool_description(other_process, "acme", "lookup") == "v1"

    with django_assert_num_queries(0):
        assert tool_description(other_process, "acme", "lookup") == "v1"
        assert servable(other_process, "acme") is servable(other_process, "acme")


def test_after_the_ttl_one_query_revalidates_and_an_unchanged_revision_keeps_the_catalog(
    other_process: TenantCache, clock: Clock, tenant: Tenant, django_assert_num_queries: Any
) -> None:
    ToolFactory(tenant=tenant, name="lookup", description="v1")
    assert tool_description(other_process, "acme", "lookup") == "v1"
    clock.now += TTL

    with django_assert_num_queries(1):
        assert tool_description(other_process, "acme", "lookup") == "v1"


def test_requests_in_flight_when_the_ttl_runs_out_share_one_read(
    other_process: TenantCache, clock: Clock, tenant: Tenant, django_assert_num_queries: Any
) -> None:
    assert servable(other_process, "acme") is not None
    clock.now += TTL

    async def sixteen_at_once() -> list[Tenant | None]:
        return await asyncio.gather(*(other_process.servable("acme") for _ in range(16)))

    with django_assert_num_queries(1):
        found = async_to_sync(sixteen_at_once)()
    assert len({id(t) for t in found}) == 1 and found[0] is not None and found[0].pk == tenant.pk


def test_a_request_after_a_nudge_reads_the_row_itself_rather_than_join_a_read_begun_before(
    other_process: TenantCache, clock: Clock, nudges: Nudges, tenant: Tenant, django_assert_num_queries: Any
) -> None:
    assert servable(other_process, "acme") is not None
    clock.now += TTL

    async def read_nudge_read() -> tuple[Tenant | None, Tenant | None]:
        first = asyncio.ensure_future(other_process.servable("acme"))
        await asyncio.sleep(0)  # the first read is under way
        nudges.callbacks[tenant.id]()
        second = await other_process.servable("acme")
        return await first, second

    with django_assert_num_queries(2):
        first, second = async_to_sync(read_nudge_read)()
    assert first is not None and second is not None and first is not second


def test_a_change_whose_nudge_is_lost_is_seen_once_the_ttl_has_passed(
    other_process: TenantCache, clock: Clock, tenant: Tenant
) -> None:
    tool = ToolFactory(tenant=tenant, name="lookup", description="v1")
    assert tool_description(other_process, "acme", "lookup") == "v1"

    services.tool_update(tool=tool, data={"description": "v2"})  # the nudge never reaches other_process

    assert tool_description(other_process, "acme", "lookup") == "v1"
    clock.now += TTL
    assert tool_description(other_process, "acme", "lookup") == "v2"


def test_a_nudge_drops_the_tenant_at_once(
    other_process: TenantCache, nudges: Nudges, tenant: Tenant, django_assert_num_queries: Any
) -> None:
    tool = ToolFactory(tenant=tenant, name="lookup", description="v1")
    assert tool_description(other_process, "acme", "lookup") == "v1"

    services.tool_update(tool=tool, data={"description": "v2"})
    nudges.callbacks[tenant.pk]()

    assert tool_description(other_process, "acme", "lookup") == "v2"


def test_a_suspension_heard_through_a_nudge_stops_serving_the_tenant(
    other_process: TenantCache, nudges: Nudges, tenant: Tenant
) -> None:
    assert servable(other_process, "acme") is not None

    services.tenant_update(tenant=tenant, data={"status": Tenant.Status.SUSPENDED})
    nudges.callbacks[tenant.pk]()

    assert servable(other_process, "acme") is None


def test_a_commit_on_this_process_is_seen_at_once_without_waiting_for_the_nudge(settings: Any, tenant: Tenant) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TENANT_CACHE_TTL": 300}
    tool = ToolFactory(tenant=tenant, name="lookup", description="v1")
    assert tool_description(tenant_cache, "acme", "lookup") == "v1"

    services.tool_update(tool=tool, data={"description": "v2"})

    assert tool_description(tenant_cache, "acme", "lookup") == "v2"


def test_every_catalog_and_tenant_change_bumps_the_revision_in_its_transaction(tenant: Tenant) -> None:
    def revision() -> int:
        return Tenant.objects.get(pk=tenant.pk).revision

    start = revision()
    tool = services.tool_create(tenant=tenant, name="fresh", config={"content": []})
    services.tool_update(tool=tool, data={"description": "changed"})
    services.tenant_update(tenant=tenant, data={"name": "Acme Two"})
    assert revision() == start + 3

    def delete_then_fail() -> None:
        with transaction.atomic():
            services.tool_delete(tool=tool)
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        delete_then_fail()
    assert revision() == start + 3


def test_catalogs_are_remembered_per_tenant(other_process: TenantCache, tenant: Tenant, other_tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="shared_name", description="acme's")
    ToolFactory(tenant=other_tenant, name="shared_name", description="globex's")

    assert tool_description(other_process, "acme", "shared_name") == "acme's"
    assert tool_description(other_process, "globex", "shared_name") == "globex's"
    assert tool_description(other_process, "acme", "shared_name") == "acme's"


def test_a_tenant_not_handed_out_by_the_cache_is_read_through(other_process: TenantCache, tenant: Tenant) -> None:
    catalog = other_process.catalog(Tenant.objects.get(pk=tenant.pk))

    assert type(catalog) is TenantCatalog
    cached = async_to_sync(other_process.servable)("acme")
    assert cached is not None
    assert isinstance(other_process.catalog(cached), CachedCatalog)


def test_unknown_and_suspended_tenants_are_not_servable(other_process: TenantCache, tenant: Tenant) -> None:
    services.tenant_create(slug="paused", name="Paused", status=Tenant.Status.SUSPENDED)

    assert servable(other_process, "missing") is None
    assert servable(other_process, "paused") is None


@pytest.mark.parametrize("tools", [3, 120])
def test_the_first_page_costs_one_query_whatever_the_catalog_size_and_then_none(
    other_process: TenantCache, tenant: Tenant, django_assert_num_queries: Any, tools: int
) -> None:
    ToolFactory.create_batch(tools, tenant=tenant)
    cached = servable(other_process, "acme")
    assert cached is not None
    catalog = other_process.catalog(cached)

    # And one for the upstreams' list hints, read once per revision for every list.
    with django_assert_num_queries(2):
        first = async_to_sync(catalog.list_tools)(after=None, limit=50)
    with django_assert_num_queries(0):
        again = async_to_sync(catalog.list_tools)(after=None, limit=50)
    with django_assert_num_queries(1):
        async_to_sync(catalog.list_prompts)(after=None, limit=50)
    assert again is first
    assert len(first.items) == min(tools, 50)
