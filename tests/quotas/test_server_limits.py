"""A rate limit of one of a tenant's named servers: it names a server of that tenant, and only a server limit does."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from mcp_platform.quotas.services import rate_limit_create
from tenants.servers import server_create
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def test_a_server_limit_names_one_server_of_its_tenant() -> None:
    acme, globex = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    reader, theirs = server_create(tenant=acme, slug="reader"), server_create(tenant=globex, slug="reader")
    cases = [
        ({"scope": "server"}, "Choose the server whose requests this limit counts."),
        ({"scope": "server", "server": theirs}, "Choose one of this tenant's servers."),
        ({"scope": "tenant", "server": reader}, "Only a server limit names a server."),
    ]
    for fields, message in cases:
        with pytest.raises(ValidationError) as refused:
            rate_limit_create(tenant=acme, rate=1, period=60, burst=1, **fields)
        assert refused.value.message_dict["server"] == [message], fields
    rate_limit_create(tenant=acme, scope="server", server=reader, rate=1, period=60, burst=1)
    with pytest.raises(ValidationError):
        rate_limit_create(tenant=acme, scope="server", server=reader, rate=2, period=60, burst=1)
    second = server_create(tenant=acme, slug="writer")
    rate_limit_create(tenant=acme, scope="server", server=second, rate=2, period=60, burst=1)
