"""Adding an upstream that acts as each person: its authorization server is discovered (no issuer is asked for), and
its catalog is read with the machine clients' shared credentials, or the admin is told why it cannot be read yet."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from tenants.federation.connection import UpstreamFailure
from tenants.federation.services import upstream_add
from tenants.models import Tenant, Upstream
from tenants.secrets import secret_set
from tests.e2e.upstreams import UpstreamServer, upstream_server

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


def test_one_without_shared_credentials_is_refused_saying_why(tenant: Tenant, upstream: UpstreamServer) -> None:
    with pytest.raises(UpstreamFailure, match="its catalog is read once a member has connected"):
        upstream_add(tenant=tenant, name="up", url=upstream.url, auth=PERSONAL)

    assert not Upstream.objects.filter(tenant=tenant).exists()
