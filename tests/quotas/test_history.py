"""Rate limits are in the catalog's history (registered by the quotas app at start-up): each change is a version,
and a restore goes through the quotas services, so a version above a ceiling set since is refused with the reason."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from reversion.models import Version

from mcp_platform.quotas import services
from mcp_platform.quotas.models import RateLimit
from tenants.history.restore import version_restore
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_limit_is_restored_through_the_services_within_the_ceiling(client: Client) -> None:
    tenant = TenantFactory(slug="acme")
    limit = services.rate_limit_create(tenant=tenant, scope="client", rate=100, period=60, burst=20)
    services.rate_limit_update(limit=limit, data={"rate": 10})
    services.rate_limit_update(limit=limit, data={"rate": 10})  # changed nothing: no version
    first, second = Version.objects.get_for_object(limit).order_by("pk")
    assert second.revision.comment == "Changed rate limit Client (each client): default, 10 per minute: rate"

    version_restore(version=first)
    assert RateLimit.objects.get(pk=limit.pk).rate == 100

    services.rate_limit_update(limit=limit, data={"rate": 10})
    services.rate_ceiling_set(tenant=tenant, rate=50, period=60, burst=100)
    with pytest.raises(ValidationError, match="Above this tenant's ceiling of 50 per minute"):
        version_restore(version=first)
    assert RateLimit.objects.get(pk=limit.pk).rate == 10


def test_a_limits_history_page_is_its_tenants_admins(client: Client) -> None:
    ours, theirs = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    limit = services.rate_limit_create(tenant=theirs, scope="tenant", rate=100, period=60, burst=20)
    user = UserFactory(username="ada")
    MembershipFactory(tenant=ours, user=user, role="admin")
    client.force_login(user)

    assert client.get(reverse("admin:quotas_ratelimit_history", args=[limit.pk])).status_code == 404
    mine = services.rate_limit_create(tenant=ours, scope="tenant", rate=100, period=60, burst=20)
    page = client.get(reverse("admin:quotas_ratelimit_history", args=[mine.pk]))
    assert [v["changed"] for v in page.context["versions"]] == ["Created"]
