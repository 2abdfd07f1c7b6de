"""How the platform is known to an upstream's authorization server: registered once per target, and again when the
platform is reached at another address (the authorization server only sends people back to the URI it knows)."""

from __future__ import annotations

import asyncio

from oauth2_provider.models import get_application_model

from tenants.connections.flow import redirect_uri, registration
from tenants.models import OAuthClientRegistration, Upstream
from tests.tenants.connections.conftest import Platform

FIRST, SECOND = "http://127.0.0.1:8001", "http://127.0.0.1:8002"


def test_a_client_is_registered_once_per_address_the_platform_is_reached_at(platform: Platform) -> None:
    upstream = Upstream.objects.create(
        tenant=platform.tenant, name="notes", url=platform.mcp_url, auth={"type": "user_oauth", "client": "dynamic"}
    )
    target = f"upstream:{upstream.pk}"

    def register(base_url: str) -> OAuthClientRegistration:
        row, _server = asyncio.run(
            registration(
                tenant_id=platform.tenant.pk, target=target, item=upstream, auth=upstream.auth, base_url=base_url
            )
        )
        return row

    first = register(FIRST)
    assert register(FIRST).client_id == first.client_id
    second = register(SECOND)

    assert second.client_id != first.client_id and second.redirect_uri == redirect_uri(SECOND)
    assert OAuthClientRegistration.objects.filter(target=target).count() == 1
    registered = get_application_model().objects.get(client_id=second.client_id)
    assert registered.redirect_uris == redirect_uri(SECOND)
