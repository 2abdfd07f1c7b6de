"""Adding an upstream that acts as each person: its authorization server is discovered (no issuer is asked for), and
its catalog is read with the machine clients' shared credentials, or, without them, once a member has connected."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from tenants.connections import services
from tenants.federation.services import upstream_add, upstream_refresh
from tenants.models import Tenant, Upstream
from tenants.secrets import secret_set
from tests.e2e.upstreams import UpstreamServer
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

PERSONAL = {"type": "user_oauth", "client": "dynamic"}


def test_an_upstream_acting_as_each_person_is_read_with_the_machine_clients_credentials(
    tenant: Tenant, sdk_upstream: UpstreamServer
) -> None:
    secret_set(tenant=tenant, name="reader", value="shared-reader-token")
    auth = {**PERSONAL, "machine": {"type": "bearer", "secret": "reader"}}

    added, report = upstream_add(tenant=tenant, name="up", url=sdk_upstream.url, auth=auth)

    assert added.auth == auth
    assert report.created > 0 and tenant.tools.filter(upstream=added, name="up_echo").exists()


def test_one_without_shared_credentials_waits_unread_until_a_member_connects(
    tenant: Tenant, sdk_upstream: UpstreamServer
) -> None:
    added, report = upstream_add(tenant=tenant, name="up", url=sdk_upstream.url, auth=PERSONAL)

    assert report.created == 0 and added.last_refreshed_at is None and not added.last_error
    # The schedule skips it quietly: nobody to read it as is no failure of the upstream's.
    assert async_to_sync(upstream_refresh)(added.pk, pooled=False) is None
    assert not Upstream.objects.get(pk=added.pk).last_error

    member = UserFactory()
    services.credential_store_oauth(
        tenant_id=tenant.pk,
        user_id=member.pk,
        target=f"upstream:{added.pk}",
        access_token="member-access-token",
        refresh_token=None,
        expires_in=3600,
        scope="",
        issuer="https://as.example",
    )
    read = async_to_sync(upstream_refresh)(added.pk, pooled=False)

    assert read is not None and tenant.tools.filter(upstream=added, name="up_echo").exists()
