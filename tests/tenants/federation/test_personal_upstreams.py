"""Adding an upstream that acts as each person: its authorization server is discovered (no issuer is asked for), and
its catalog is read with the machine clients' shared credentials, or, without them, once a member has connected."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.test import override_settings

from tenants.connections import services
from tenants.federation.services import upstream_add, upstream_refresh
from tenants.models import Tenant, Upstream
from tenants.secrets import secret_set
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

PERSONAL = {"type": "user_oauth", "client": "dynamic"}


@pytest.fixture
def loopback_allowed() -> Iterator[None]:
    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}):
        yield


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[UpstreamServer]:
    with ExitStack() as stack:
        yield upstream_server(stack, tmp_path / "upstream")


def test_an_upstream_acting_as_each_person_is_read_with_the_machine_clients_credentials(
    tenant: Tenant, upstream: UpstreamServer
) -> None:
    secret_set(tenant=tenant, name="reader", value="shared-reader-token")
    auth = {**PERSONAL, "machine": {"type": "bearer", "secret": "reader"}}

    added, report = upstream_add(tenant=tenant, name="up", url=upstream.url, auth=auth)

    assert added.auth == auth
    assert report.created > 0 and tenant.tools.filter(upstream=added, name="up_echo").exists()


def test_one_without_shared_credentials_waits_unread_until_a_member_connects(
    tenant: Tenant, upstream: UpstreamServer
) -> None:
    added, report = upstream_add(tenant=tenant, name="up", url=upstream.url, auth=PERSONAL)

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
