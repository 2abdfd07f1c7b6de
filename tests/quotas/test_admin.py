"""Rate limits in the admin: a tenant's admins set their own tenant's limits, within the ceiling platform staff
set, which they can read but not change; every save goes through the services (the tenant's revision moves)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mcp_platform.quotas import services
from mcp_platform.quotas.models import RateCeiling, RateLimit
from tenants.models import Tenant
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ours() -> Tenant:
    return TenantFactory(slug="acme", name="Acme")


@pytest.fixture
def theirs() -> Tenant:
    return TenantFactory(slug="globex", name="Globex")


@pytest.fixture
def tenant_admin(client: Client, ours: Tenant) -> Client:
    user = UserFactory(username="ada")
    MembershipFactory(tenant=ours, user=user, role="admin")
    client.force_login(user)
    return client


@pytest.fixture
def staff(client: Client) -> Client:
    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    return client


def limit_form(tenant: Tenant, **changes: Any) -> dict[str, Any]:
    return {
        "tenant": tenant.pk,
        "scope": "client",
        "client_id": "",
        "tool_name": "",
        "rate": 60,
        "period": 60,
        "burst": 10,
        **changes,
    }


def test_a_tenant_admin_adds_a_limit_to_their_tenant_and_the_revision_moves(tenant_admin: Client, ours: Tenant) -> None:
    revision = ours.revision
    response = tenant_admin.post(
        reverse("admin:quotas_ratelimit_add"), limit_form(ours, scope="tool", tool_name="search")
    )
    assert response.status_code == 302, response.content
    stored = RateLimit.objects.get(tenant=ours)
    assert (stored.scope, stored.tool_name, stored.rate, stored.period, stored.burst) == ("tool", "search", 60, 60, 10)
    ours.refresh_from_db()
    assert ours.revision > revision


def test_a_tenant_admin_cannot_add_a_limit_to_another_tenant(tenant_admin: Client, theirs: Tenant) -> None:
    response = tenant_admin.post(reverse("admin:quotas_ratelimit_add"), limit_form(theirs))
    assert response.status_code == 200
    assert "tenant" in response.context["adminform"].form.errors
    assert not RateLimit.objects.exists()


def test_a_tenant_admin_sees_only_their_tenants_limits(tenant_admin: Client, ours: Tenant, theirs: Tenant) -> None:
    mine = services.rate_limit_create(tenant=ours, scope="tenant", rate=1, period=1, burst=1)
    other = services.rate_limit_create(tenant=theirs, scope="tenant", rate=1, period=1, burst=1)
    listed = tenant_admin.get(reverse("admin:quotas_ratelimit_changelist")).context["cl"].result_list
    assert list(listed) == [mine]
    assert tenant_admin.get(reverse("admin:quotas_ratelimit_change", args=[other.pk])).status_code == 404


def test_a_limit_above_the_ceiling_is_refused_with_the_reason(tenant_admin: Client, ours: Tenant) -> None:
    services.rate_ceiling_set(tenant=ours, rate=100, period=60, burst=20)
    url = reverse("admin:quotas_ratelimit_add")

    too_fast = tenant_admin.post(url, limit_form(ours, rate=3, period=1))  # 180 a minute
    too_big = tenant_admin.post(url, limit_form(ours, burst=21))
    assert "ceiling" in str(too_fast.context["adminform"].form.errors["rate"])
    assert "ceiling" in str(too_big.context["adminform"].form.errors["burst"])
    # 6000 an hour is the ceiling's 100 a minute: within it.
    assert tenant_admin.post(url, limit_form(ours, rate=6000, period=3600, burst=20)).status_code == 302
    assert RateLimit.objects.count() == 1


def test_a_client_limit_cannot_name_a_tool(tenant_admin: Client, ours: Tenant) -> None:
    response = tenant_admin.post(reverse("admin:quotas_ratelimit_add"), limit_form(ours, tool_name="search"))
    assert "tool_name" in response.context["adminform"].form.errors
    assert not RateLimit.objects.exists()


def test_a_tenant_admin_reads_their_ceiling_but_cannot_set_change_or_remove_it(
    tenant_admin: Client, ours: Tenant
) -> None:
    ceiling = services.rate_ceiling_set(tenant=ours, rate=100, period=60, burst=20)
    change_url = reverse("admin:quotas_rateceiling_change", args=[ceiling.pk])
    assert tenant_admin.get(change_url).status_code == 200
    assert tenant_admin.post(change_url, {"rate": 100_000, "period": 1, "burst": 100_000}).status_code == 403
    assert (
        tenant_admin.post(reverse("admin:quotas_rateceiling_delete", args=[ceiling.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert tenant_admin.get(reverse("admin:quotas_rateceiling_add")).status_code == 403
    ceiling.refresh_from_db()
    assert (ceiling.rate, ceiling.period, ceiling.burst) == (100, 60, 20)


def test_platform_staff_set_a_tenants_ceiling(staff: Client, ours: Tenant) -> None:
    revision = ours.revision
    response = staff.post(
        reverse("admin:quotas_rateceiling_add"), {"tenant": ours.pk, "rate": 50, "period": 1, "burst": 100}
    )
    assert response.status_code == 302, response.content
    assert RateCeiling.objects.get(tenant=ours).rate == 50
    ours.refresh_from_db()
    assert ours.revision > revision
