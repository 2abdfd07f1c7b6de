"""The endpoint's rate-limit check: which buckets a request falls under (tenant, client, tool, ceiling), the
refusal it raises, the metric it counts, and a tenant without limits costing no query and no bucket store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from prometheus_client import REGISTRY

from mcp_core import jsonrpc
from mcp_core.errors import RATE_LIMITED, RateLimited, error_to_wire
from mcp_platform.quotas import services
from mcp_platform.quotas.buckets import MemoryBuckets, RedisBuckets
from mcp_platform.quotas.check import limit_configs, rate_limits_check, use_bucket_store
from tenants.models import Tenant
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

HOURLY = {"rate": 1, "period": 3600}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Iterator[Clock]:
    clock = Clock()
    use_bucket_store(MemoryBuckets(clock=clock))
    limit_configs.clear()
    yield clock
    use_bucket_store(None)
    limit_configs.clear()


@pytest.fixture
def tenant(clock: Clock) -> Tenant:
    return TenantFactory(slug="acme")


def call(tool: str, request_id: int = 1) -> jsonrpc.Request:
    return jsonrpc.Request(id=request_id, method="tools/call", params={"name": tool, "arguments": {}})


def listing() -> jsonrpc.Request:
    return jsonrpc.Request(id=1, method="tools/list", params={})


def check(tenant: Tenant, request: jsonrpc.Request, *, client_id: str = "", address: str = "192.0.2.1") -> None:
    async_to_sync(rate_limits_check)(tenant=tenant, request=request, client_id=client_id, client_address=address)


def admitted(tenant: Tenant, request: jsonrpc.Request, times: int, **who: Any) -> int:
    count = 0
    for _ in range(times):
        try:
            check(tenant, request, **who)
        except RateLimited:
            continue
        count += 1
    return count


def refusal(tenant: Tenant, request: jsonrpc.Request, **who: Any) -> RateLimited:
    with pytest.raises(RateLimited) as caught:
        check(tenant, request, **who)
    return caught.value


def fresh(tenant: Tenant) -> Tenant:
    """The tenant as the tenant cache hands it out after a change (a new revision)."""
    tenant.refresh_from_db()
    return tenant


def refused_count(tenant: str, limit: str) -> float:
    return REGISTRY.get_sample_value("mcp_rate_limited_total", {"tenant": tenant, "limit": limit}) or 0.0


def test_a_tenant_limit_counts_every_request_and_refuses_with_429_and_retry_after(tenant: Tenant) -> None:
    services.rate_limit_create(tenant=tenant, scope="tenant", burst=3, **HOURLY)
    tenant = fresh(tenant)
    before = refused_count("acme", "tenant")
    assert admitted(tenant, listing(), 2) + admitted(tenant, call("echo"), 2, client_id="other") == 3

    refused = refusal(tenant, listing())
    status, error = error_to_wire(refused)
    assert status == 429
    assert error["code"] == RATE_LIMITED
    assert error["data"]["limit"] == "tenant"
    assert 3590 < refused.retry_after <= 3600 and error["data"]["retryAfter"] == 3600
    assert refused_count("acme", "tenant") - before == 2


def test_each_client_has_its_own_bucket_and_a_named_client_its_own_limit(tenant: Tenant) -> None:
    services.rate_limit_create(tenant=tenant, scope="client", burst=2, **HOURLY)
    services.rate_limit_create(tenant=tenant, scope="client", client_id="big", burst=5, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, listing(), 4, client_id="small-1") == 2
    assert admitted(tenant, listing(), 4, client_id="small-2") == 2
    assert admitted(tenant, listing(), 8, client_id="big") == 5
    assert refusal(tenant, listing(), client_id="small-1").limit == "client"


def test_on_a_public_tenant_the_client_is_its_address_and_an_ipv6_64_is_one_client(tenant: Tenant) -> None:
    services.rate_limit_create(tenant=tenant, scope="client", burst=2, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, listing(), 1, address="2001:db8:1:2::1") == 1
    assert admitted(tenant, listing(), 2, address="2001:db8:1:2::ffff") == 1
    assert admitted(tenant, listing(), 2, address="2001:db8:1:3::1") == 2
    assert admitted(tenant, listing(), 3, address="192.0.2.7") == 2
    # An OAuth client id that reads like an address is not that address.
    assert admitted(tenant, listing(), 2, client_id="192.0.2.7") == 2


def test_a_tool_limit_counts_only_calls_of_that_tool(tenant: Tenant) -> None:
    services.rate_limit_create(tenant=tenant, scope="tool", tool_name="search", burst=1, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, call("search"), 3, client_id="a") == 1
    assert admitted(tenant, call("search"), 1, client_id="b") == 0
    assert admitted(tenant, call("fetch"), 3) == 3
    assert admitted(tenant, listing(), 3) == 3
    assert refusal(tenant, call("search")).limit == "tool"


def test_a_default_tool_limit_gives_each_tool_its_own_bucket(tenant: Tenant) -> None:
    services.rate_limit_create(tenant=tenant, scope="tool", burst=2, **HOURLY)
    services.rate_limit_create(tenant=tenant, scope="tool", tool_name="cheap", burst=10, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, call("search"), 3) == 2
    assert admitted(tenant, call("fetch"), 3) == 2
    assert admitted(tenant, call("cheap"), 12) == 10


def test_limits_refill_with_time(tenant: Tenant, clock: Clock) -> None:
    services.rate_limit_create(tenant=tenant, scope="tenant", rate=10, period=60, burst=2)
    tenant = fresh(tenant)
    assert admitted(tenant, listing(), 3) == 2
    assert 5 < refusal(tenant, listing()).retry_after <= 6
    clock.now += 6
    assert admitted(tenant, listing(), 2) == 1


def test_a_changed_limit_holds_from_the_next_revision_on(tenant: Tenant) -> None:
    limit = services.rate_limit_create(tenant=tenant, scope="tenant", burst=1, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, listing(), 2) == 1
    services.rate_limit_delete(limit=limit)
    assert admitted(tenant, listing(), 1) == 0  # this process still holds the old revision's copy
    assert admitted(fresh(tenant), listing(), 5) == 5


def test_the_ceiling_holds_the_whole_tenant_even_without_limits_of_its_own(tenant: Tenant) -> None:
    services.rate_ceiling_set(tenant=tenant, burst=3, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, listing(), 2, client_id="a") + admitted(tenant, listing(), 2, client_id="b") == 3
    assert refusal(tenant, listing()).limit == "ceiling"


def test_a_tenant_without_limits_costs_no_query_once_known_and_never_asks_the_store(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    # A store that cannot be reached counts every request it is asked about: none must be.
    unreachable = RedisBuckets(url="redis://127.0.0.1:1/0", prefix="t")
    use_bucket_store(unreachable)
    before = REGISTRY.get_sample_value("mcp_rate_limit_backend_failures_total") or 0.0
    check(tenant, listing())
    with django_assert_num_queries(0):
        for _ in range(5):
            check(tenant, call("echo"))
    assert (REGISTRY.get_sample_value("mcp_rate_limit_backend_failures_total") or 0.0) == before


def test_limits_are_per_tenant(tenant: Tenant) -> None:
    other = TenantFactory(slug="globex")
    services.rate_limit_create(tenant=tenant, scope="client", burst=1, **HOURLY)
    services.rate_limit_create(tenant=other, scope="client", burst=1, **HOURLY)
    tenant, other = fresh(tenant), fresh(other)
    assert admitted(tenant, listing(), 2, client_id="shared") == 1
    assert admitted(other, listing(), 2, client_id="shared") == 1


def test_a_call_naming_no_possible_tool_gets_no_tool_bucket(tenant: Tenant) -> None:
    services.rate_limit_create(tenant=tenant, scope="tool", burst=1, **HOURLY)
    tenant = fresh(tenant)
    assert admitted(tenant, call("x" * 10_000), 3) == 3
    assert admitted(tenant, call("no spaces"), 3) == 3
    assert admitted(tenant, call("fine"), 3) == 1
