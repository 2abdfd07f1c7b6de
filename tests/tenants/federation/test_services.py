"""What an upstream's row may hold, checked before it is stored: a personal config needs no named authorization
server (an upstream's is discovered), and no credential rides in the query of an MCP endpoint's URL."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from tenants.federation.services import upstream_validate
from tenants.models import Tenant, Upstream

pytestmark = pytest.mark.django_db


def upstream(tenant: Tenant, auth: Any) -> Upstream:
    return Upstream(tenant=tenant, name="docs", url="https://docs.example/mcp", prefix="docs_", auth=auth)


@pytest.mark.parametrize(
    "auth",
    [
        {"type": "user_oauth"},
        {
            "type": "user_oauth",
            "client": "dynamic",
            "scope": "notes.read",
            "machine": {"type": "bearer", "secret": "t"},
        },
        {"type": "user_key", "placement": "header", "name": "X-Key", "label": "Notes key"},
        {"type": "token_exchange", "client_id": "ex", "secret": "ex", "audience": "https://docs.example/mcp"},
    ],
)
def test_a_personal_config_is_stored_without_an_issuer(tenant: Tenant, auth: Any) -> None:
    upstream_validate(upstream(tenant, auth))


@pytest.mark.parametrize(
    "auth",
    [
        {"type": "query", "secret": "t", "name": "key"},
        {"type": "user_key", "placement": "query", "name": "key", "label": "Key"},
        {"type": "user_key", "placement": "bearer", "machine": {"type": "query", "secret": "t", "name": "key"}},
        {"type": "user_oauth", "client": "manual"},
    ],
)
def test_a_credential_in_the_query_or_a_broken_personal_config_is_refused(tenant: Tenant, auth: Any) -> None:
    with pytest.raises(ValidationError) as refused:
        upstream_validate(upstream(tenant, auth))
    assert list(refused.value.message_dict) == ["auth"]
